//! The SDK floor: the CPU time that the shop page's DynamoDB calls cost through aws-sdk-dynamodb
//! alone, in this process, on a current-thread runtime and on a multi-thread one.

use std::sync::Arc;

use dynarelay::dynamo;

use super::{FLOOR_PAGES, LONG_USER, WARM_UP, direct::Direct, procfs::cpu_ticks, seed::ShopNames};

/// The runtime the SDK floor runs on.
#[derive(Debug, Clone, Copy)]
pub(super) enum FloorRuntime {
    /// One current-thread runtime: one thread, all the tasks.
    CurrentThread,
    /// One multi-thread runtime with 2 workers.
    MultiThread,
    /// This many threads, each a current-thread runtime with a client of its own and its share
    /// of the tasks: the shape of dynarelay's server, which by default serves on one such thread
    /// per CPU (`--threads`), as many as this machine has.
    PerCore(usize),
}

impl FloorRuntime {
    fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            Self::CurrentThread | Self::PerCore(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            Self::MultiThread => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build(),
        }
    }

    pub(super) fn describe(self) -> String {
        match self {
            Self::CurrentThread => "current-thread tokio runtime".to_owned(),
            Self::MultiThread => "multi-thread tokio runtime, 2 workers".to_owned(),
            Self::PerCore(threads) => format!(
                "a current-thread tokio runtime and a client on each of {threads} threads (the server's shape)"
            ),
        }
    }
}

/// The SDK floor: the CPU time, in clock ticks, that [`FLOOR_PAGES`] pages' DynamoDB calls cost
/// in this process, sent through aws-sdk-dynamodb alone on a fresh runtime of `flavor` (with a
/// client of its own, so that its connections belong to that runtime), from `tasks` tasks at
/// once as dynarelay's server is loaded by as many clients. A page is what dynarelay sends for the shop
/// page: the user's GetItem and the page's Query (21 items) at the same time, each checked.
///
/// It includes everything the client side of those calls costs: building and signing the
/// requests (SigV4), serialising them to JSON, the HTTP client (hyper, its connection pool, the
/// loopback socket's system calls), parsing the JSON responses into items, and the tokio
/// scheduling around them. It excludes DynamoDB Local's own CPU (another process) and all that a
/// GraphQL server adds: the HTTP server, parsing and executing the query, cursors, the response.
/// It reads this process's `/proc/self/stat`, which counts all its threads; the bench's own
/// runtime idles meanwhile. It reads whole clock ticks (10 ms at `CLK_TCK` 100), as the servers'
/// CPU is read: a tick is 5 µs per page over [`FLOOR_PAGES`] pages.
pub(super) async fn sdk_floor(
    flavor: FloorRuntime,
    tasks: usize,
    endpoint: &str,
    names: &ShopNames,
) -> anyhow::Result<u64> {
    let (endpoint, names) = (endpoint.to_owned(), names.clone());
    // On a thread outside the bench's runtime, where a runtime may block and be dropped.
    let thread = std::thread::spawn(move || -> anyhow::Result<u64> {
        if let FloorRuntime::PerCore(threads) = flavor {
            return per_core_floor(threads, tasks, &endpoint, &names);
        }
        flavor.build()?.block_on(async move {
            let direct = Arc::new(Direct {
                client: dynamo::client_for_local(&endpoint),
                names,
            });
            direct_load(&direct, WARM_UP * tasks, tasks).await?;
            let pid = std::process::id();
            let before = cpu_ticks(pid)?;
            direct_load(&direct, FLOOR_PAGES, tasks).await?;
            Ok(cpu_ticks(pid)? - before)
        })
    });
    tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the SDK floor's thread panicked"))?
}

/// [`sdk_floor`] on `threads` threads, each a current-thread runtime with a client of its own,
/// sending its share of the pages from its share of the `all_tasks` tasks. The process's CPU
/// is read once every thread has warmed up, and again once every thread is done.
fn per_core_floor(
    threads: usize,
    all_tasks: usize,
    endpoint: &str,
    names: &ShopNames,
) -> anyhow::Result<u64> {
    let threads = threads.clamp(1, all_tasks.max(1));
    let start = Arc::new(std::sync::Barrier::new(threads + 1));
    let done = Arc::new(std::sync::Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let (start, done) = (Arc::clone(&start), Arc::clone(&done));
            let (endpoint, names) = (endpoint.to_owned(), names.clone());
            let pages = FLOOR_PAGES / threads + usize::from(thread < FLOOR_PAGES % threads);
            let tasks = all_tasks / threads + usize::from(thread < all_tasks % threads);
            std::thread::spawn(move || -> anyhow::Result<()> {
                let runtime = FloorRuntime::PerCore(threads).build();
                let result = runtime.map_err(anyhow::Error::from).and_then(|runtime| {
                    let direct = Arc::new(Direct {
                        client: dynamo::client_for_local(&endpoint),
                        names,
                    });
                    runtime.block_on(direct_load(&direct, WARM_UP * tasks, tasks))?;
                    Ok((runtime, direct))
                });
                // Every thread passes both barriers, failed or not, so that none waits forever.
                start.wait();
                let result = result.and_then(|(runtime, direct)| {
                    runtime.block_on(direct_load(&direct, pages, tasks))
                });
                done.wait();
                result
            })
        })
        .collect();
    let pid = std::process::id();
    start.wait();
    let before = cpu_ticks(pid);
    done.wait();
    let after = cpu_ticks(pid);
    for worker in workers {
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("an SDK floor thread panicked"))??;
    }
    Ok(after? - before?)
}

/// `pages` of the user's GetItem and the page's Query at the same time, sent directly from
/// `concurrency` tasks at once.
async fn direct_load(direct: &Arc<Direct>, pages: usize, concurrency: usize) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..concurrency {
        let direct = Arc::clone(direct);
        let share = pages / concurrency + usize::from(client < pages % concurrency);
        tasks.spawn(async move {
            for _ in 0..share {
                direct.get_with_query_timed(LONG_USER).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}
