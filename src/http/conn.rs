//! Connections: the accept loops of the API listener and the optional health listener, each
//! connection served by hyper's HTTP/1 server with the protections of [`ConnectionSettings`]
//! (header-read and idle timeouts, a cap on open connections, header size and count limits), and
//! graceful shutdown with a drain deadline.
//!
//! Thread per core: the API listener's connections are shared out between the calling runtime
//! and [`ServeSettings::workers`] threads, each running a current-thread runtime of its own
//! with its own router (and so its own DynamoDB client and connection pool). A connection lives
//! on one thread from its first byte to its last, and so do its requests and their DynamoDB
//! calls: no request wakes another thread, which a work-stealing runtime does several times per
//! request (the measured cost is in docs/src/benchmarks.md). Each new connection goes to the
//! thread serving the fewest at that moment.

use std::{
    future::Future,
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::{Router, extract::ConnectInfo};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore, watch},
    sync::{mpsc, oneshot},
    task::JoinSet,
};

use crate::metrics::{Listener, Metrics};

/// hyper's own limit on header fields per request, which it checks without allocating.
pub const HYPER_MAX_HEADERS: usize = 100;

/// How connections are accepted and kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Longest time a client may take to send a request's headers, from when the connection
    /// opens or its previous response was sent; then the connection is closed. `None`: no limit.
    pub header_read_timeout: Option<Duration>,
    /// Close a keep-alive connection with no request in flight and no bytes read or written for
    /// this long. `None`: no limit (beyond the header-read timeout).
    pub idle_timeout: Option<Duration>,
    /// Most connections open at once on the API listener; past it, new connections wait in the
    /// kernel's backlog until one closes.
    pub max_connections: usize,
    /// Largest request header block (request line included), in bytes; larger gets 431.
    pub max_header_bytes: usize,
    /// Most header fields in one request; more gets 431.
    pub max_headers: usize,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            header_read_timeout: Some(Duration::from_secs(10)),
            idle_timeout: Some(Duration::from_secs(5)),
            max_connections: 10_000,
            max_header_bytes: 16 * 1024,
            max_headers: HYPER_MAX_HEADERS,
        }
    }
}

/// Most connections open at once on the health listener: enough for a few probes at a time.
pub const HEALTH_MAX_CONNECTIONS: usize = 16;

/// Files kept free of connections under the open-file limit: DynamoDB connections, the health
/// listener's connections, the listeners themselves, logs and the model file.
const RESERVED_FILES: u64 = 256;

/// A second listener serving only the health, readiness and metrics routes, with its own small
/// connection cap ([`HEALTH_MAX_CONNECTIONS`]), so that probes get a fresh connection even while
/// the API listener's cap holds clients off.
#[derive(Debug)]
pub struct HealthListener {
    /// Where probes connect.
    pub listener: TcpListener,
    /// Its routes: [`super::health_router`].
    pub router: Router,
}

/// What [`serve`] needs beyond the listener and the router.
#[derive(Debug)]
pub struct ServeSettings {
    /// After shutdown is asked for, how long requests in flight may take to finish.
    pub drain_timeout: Duration,
    /// The connection protections, for both listeners (the health listener has its own cap).
    pub connections: ConnectionSettings,
    /// The optional health listener.
    pub health: Option<HealthListener>,
    /// Where connection counts go (the application's, so that `/metrics` shows them).
    pub metrics: Arc<Metrics>,
    /// One router per thread to start beside the calling one, each serving its share of the
    /// API listener's connections on a current-thread runtime of its own (see the module docs).
    /// Empty: the calling runtime serves every connection.
    pub workers: Vec<Router>,
}

impl ServeSettings {
    /// The default protections and a 10 s drain, recording into `metrics`, every connection
    /// served on the calling runtime.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            drain_timeout: Duration::from_secs(10),
            connections: ConnectionSettings::default(),
            health: None,
            metrics,
            workers: Vec::new(),
        }
    }
}

/// Serves `router` on `listener` (and the health listener, if any) until `shutdown` resolves,
/// then stops accepting, closes idle connections, and lets requests in flight finish for at most
/// the drain timeout before closing what is left. Every request carries the peer address as
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    settings: ServeSettings,
) -> io::Result<()> {
    let ServeSettings {
        drain_timeout,
        connections,
        health,
        metrics,
        workers,
    } = settings;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(connections.header_read_timeout)
        .max_header_size(connections.max_header_bytes);
    // hyper keeps its default number of header slots on the stack; any other number moves them
    // to the heap for every request (about 5% by hyper's own account), so the default is
    // hyper's and is set only when changed.
    if connections.max_headers != HYPER_MAX_HEADERS {
        builder.max_headers(connections.max_headers);
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = |name: Listener, router: Router| Connections {
        name,
        router,
        builder: builder.clone(),
        idle_timeout: connections.idle_timeout,
        metrics: metrics.clone(),
        stop: stop_rx.clone(),
    };
    let mut threads = Vec::with_capacity(workers.len());
    for (i, router) in workers.into_iter().enumerate() {
        threads.push(Worker::start(
            i + 1,
            server(Listener::Api, router),
            drain_timeout,
        )?);
    }
    let api = Acceptor {
        server: server(Listener::Api, router),
        cap: connections.max_connections,
        local: Arc::default(),
        workers: threads.iter().map(Worker::handle).collect(),
    };
    let local = Arc::clone(&api.local);
    let health = health.map(|health| {
        (
            health.listener,
            Acceptor {
                server: server(Listener::Health, health.router),
                cap: HEALTH_MAX_CONNECTIONS,
                local: Arc::default(),
                workers: Vec::new(),
            },
        )
    });
    let loops = async {
        let health = async {
            match health {
                Some((listener, acceptor)) => acceptor.run(listener).await,
                None => JoinSet::new(),
            }
        };
        tokio::join!(api.run(listener), health)
    };
    let stopper = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    let ((mut api_tasks, mut health_tasks), ()) = tokio::join!(loops, stopper);
    let drained = async {
        while api_tasks.join_next().await.is_some() {}
        while health_tasks.join_next().await.is_some() {}
        all_closed(&local).await;
    };
    if tokio::time::timeout(drain_timeout, drained).await.is_err() {
        tracing::warn!(
            ?drain_timeout,
            "requests still in flight at the drain deadline; closing them"
        );
    }
    // Each worker keeps the same deadline for its own connections.
    for worker in threads {
        worker.finished().await;
    }
    // Dropping the task sets aborts the connections still open.
    Ok(())
}

/// How the connections of one listener are served: hyper's settings, the router, and the
/// protections, on whichever thread the connection was given to.
struct Connections {
    name: Listener,
    router: Router,
    builder: http1::Builder,
    idle_timeout: Option<Duration>,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
}

/// A connection on its way to a worker thread, with its place under the cap and on its thread's
/// count.
struct Handoff {
    stream: std::net::TcpStream,
    peer: SocketAddr,
    permit: OwnedSemaphorePermit,
    load: Load,
}

/// One to the connection count of the thread serving a connection, until dropped.
struct Load(Arc<AtomicUsize>);

impl Load {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The acceptor's side of a worker thread: where to send it connections, and how many it serves.
#[derive(Clone)]
struct WorkerHandle {
    open: Arc<AtomicUsize>,
    send: mpsc::UnboundedSender<Handoff>,
}

/// A thread serving connections on a current-thread runtime of its own.
struct Worker {
    handle: WorkerHandle,
    done: oneshot::Receiver<()>,
}

impl Worker {
    /// Starts worker thread `index`, which serves what it is handed until shutdown, then drains
    /// its connections for at most `drain_timeout`.
    fn start(index: usize, server: Connections, drain_timeout: Duration) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (send, handoffs) = mpsc::unbounded_channel();
        let (done_tx, done) = oneshot::channel();
        let open: Arc<AtomicUsize> = Arc::default();
        let served = Arc::clone(&open);
        std::thread::Builder::new()
            .name(format!("dynarelay-worker-{index}"))
            .spawn(move || {
                runtime.block_on(server.work(handoffs, &served, drain_timeout));
                // Blocking tasks (none of ours) get a moment; the connections are gone already.
                runtime.shutdown_timeout(Duration::from_secs(1));
                let _ = done_tx.send(());
            })?;
        Ok(Self {
            handle: WorkerHandle { open, send },
            done,
        })
    }

    fn handle(&self) -> WorkerHandle {
        self.handle.clone()
    }

    /// Resolves once the thread has drained and stopped.
    async fn finished(self) {
        drop(self.handle);
        let _ = self.done.await;
    }
}

impl Connections {
    /// A worker thread's loop: serves the connections it is handed until shutdown, then lets
    /// their requests in flight finish, and its WebSockets close (`open` of them are left), for
    /// at most `drain_timeout`.
    async fn work(
        self,
        mut handoffs: mpsc::UnboundedReceiver<Handoff>,
        open: &AtomicUsize,
        drain_timeout: Duration,
    ) {
        let mut stop = self.stop.clone();
        let mut tasks = JoinSet::new();
        loop {
            while tasks.try_join_next().is_some() {}
            let handoff = tokio::select! {
                handoff = handoffs.recv() => handoff,
                _ = stop.wait_for(|stop| *stop) => None,
            };
            let Some(Handoff {
                stream,
                peer,
                permit,
                load,
            }) = handoff
            else {
                break;
            };
            match TcpStream::from_std(stream) {
                Ok(stream) => {
                    tasks.spawn(self.connection(stream, peer, permit, load));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "a connection could not be moved to its thread");
                }
            }
        }
        let drained = async {
            while tasks.join_next().await.is_some() {}
            all_closed(open).await;
        };
        if tokio::time::timeout(drain_timeout, drained).await.is_err() {
            tracing::warn!(
                ?drain_timeout,
                "requests still in flight at the drain deadline; closing them"
            );
        }
    }
}

/// Waits until none of a thread's `open` connections is left. A WebSocket is served by a task
/// of its own once upgraded, which outlives its connection's task: it closes its socket (1001)
/// when told the server stops, and its thread's runtime must not end before it has. (A count
/// polled, since the upgrade's task is spawned by hyper and axum, out of reach of a `JoinSet`.)
async fn all_closed(open: &AtomicUsize) {
    while open.load(Ordering::Relaxed) > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The accept loop of one listener.
struct Acceptor {
    server: Connections,
    cap: usize,
    /// How many connections the calling runtime serves.
    local: Arc<AtomicUsize>,
    /// The worker threads that share the connections with it.
    workers: Vec<WorkerHandle>,
}

impl Acceptor {
    /// Accepts connections until told to stop, then hands back the connections' tasks (those
    /// served on the calling runtime).
    async fn run(self, listener: TcpListener) -> JoinSet<()> {
        let mut stop = self.server.stop.clone();
        let permits = Arc::new(Semaphore::new(self.cap));
        let mut tasks = JoinSet::new();
        loop {
            while tasks.try_join_next().is_some() {}
            // Past the cap, stop accepting: new connections wait in the kernel's backlog while
            // the open ones are served.
            let permit = match permits.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    self.server.metrics.connection_cap_reached(self.server.name);
                    tokio::select! {
                        permit = permits.clone().acquire_owned() => match permit {
                            Ok(permit) => permit,
                            Err(_) => break,
                        },
                        _ = stop.wait_for(|stop| *stop) => break,
                    }
                }
            };
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = stop.wait_for(|stop| *stop) => break,
            };
            match accepted {
                Ok((stream, peer)) => {
                    if let Some(handoff) = self.hand_off(stream, peer, permit) {
                        let (stream, peer, permit, load) = handoff;
                        tasks.spawn(self.server.connection(stream, peer, permit, load));
                    }
                }
                Err(err) => {
                    // Out of file descriptors (EMFILE, ENFILE), or a connection reset before it
                    // was accepted: never fatal. Back off briefly rather than spin.
                    tracing::warn!(error = %err, listener = self.server.name.label(), "accepting a connection failed");
                    drop(permit);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(50)) => {}
                        _ = stop.wait_for(|stop| *stop) => break,
                    }
                }
            }
        }
        tasks
    }

    /// Gives a new connection to the thread serving the fewest (a worker thread, or `None`
    /// returned), or hands it back to be served here: when this runtime serves the fewest, or
    /// the connection could not be moved.
    fn hand_off(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        permit: OwnedSemaphorePermit,
    ) -> Option<(TcpStream, SocketAddr, OwnedSemaphorePermit, Load)> {
        let here = self.local.load(Ordering::Relaxed);
        let least = self
            .workers
            .iter()
            .min_by_key(|w| w.open.load(Ordering::Relaxed))
            .filter(|w| w.open.load(Ordering::Relaxed) < here);
        let Some(worker) = least else {
            return Some((stream, peer, permit, Load::new(&self.local)));
        };
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(err) => {
                tracing::warn!(error = %err, "a connection could not be moved to its thread");
                return None;
            }
        };
        let handoff = Handoff {
            stream,
            peer,
            permit,
            load: Load::new(&worker.open),
        };
        match worker.send.send(handoff) {
            Ok(()) => None,
            // The worker is gone (it only stops at shutdown): serve the connection here.
            Err(mpsc::error::SendError(handoff)) => {
                let stream = TcpStream::from_std(handoff.stream).ok()?;
                Some((stream, peer, handoff.permit, Load::new(&self.local)))
            }
        }
    }
}

impl Connections {
    /// Serves one connection until it closes, or until shutdown and its request in flight ends.
    fn connection(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        permit: OwnedSemaphorePermit,
        load: Load,
    ) -> impl Future<Output = ()> + Send + 'static {
        let name = self.name;
        let metrics = self.metrics.clone();
        let builder = self.builder.clone();
        let idle_timeout = self.idle_timeout;
        let mut stop = self.stop.clone();
        let tower = TowerToHyperService::new(self.router.clone());
        async move {
            let slot = ConnectionSlot {
                _open: Arc::new(OpenConnection::new(metrics.clone(), name, permit, load)),
                stop: stop.clone(),
            };
            let _ = stream.set_nodelay(true);
            let activity = Arc::new(Activity::new());
            let io = TokioIo::new(Tracked {
                inner: stream,
                activity: activity.clone(),
            });
            let in_service = activity.clone();
            let service = service_fn(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request.extensions_mut().insert(slot.clone());
                let busy = in_service.request_started();
                let response = hyper::service::Service::call(&tower, request);
                async move {
                    let response = response.await;
                    drop(busy);
                    response
                }
            });
            let connection = builder.serve_connection(io, service).with_upgrades();
            let mut connection = std::pin::pin!(connection);
            // hyper has no idle timeout of its own (its header-read timer only runs while it
            // waits for a request's headers), so this one is kept here: a timer that, when no
            // request is in flight and no byte was read or written for `idle_timeout`, asks the
            // connection to close as shutdown does.
            let idle = tokio::time::sleep(idle_timeout.unwrap_or(Duration::MAX));
            let mut idle = std::pin::pin!(idle);
            let mut closing = false;
            let mut idle_closed = false;
            let result = loop {
                tokio::select! {
                    result = connection.as_mut() => break result,
                    _ = stop.wait_for(|stop| *stop), if !closing => {
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    () = idle.as_mut(), if !closing && idle_timeout.is_some() => {
                        let limit = idle_timeout.unwrap_or(Duration::MAX);
                        let quiet = activity.quiet_for();
                        if activity.in_flight() == 0 && quiet >= limit {
                            connection.as_mut().graceful_shutdown();
                            closing = true;
                            idle_closed = true;
                        } else {
                            let wait = if activity.in_flight() == 0 { limit - quiet } else { limit };
                            idle.as_mut().reset(tokio::time::Instant::now() + wait);
                        }
                    }
                }
            };
            match result {
                Err(err) if err.is_timeout() => metrics.connection_timed_out(name, "header_read"),
                Err(err) => tracing::debug!(error = %err, %peer, "connection ended with an error"),
                Ok(()) if idle_closed => metrics.connection_timed_out(name, "idle"),
                Ok(()) => {}
            }
        }
    }
}

/// A connection's place, as each of its requests carries it: a request that takes the connection
/// over (a WebSocket upgrade) keeps it under the cap and in the gauge until it ends, and hears
/// of the server's shutdown through `stop`.
#[derive(Clone)]
pub(super) struct ConnectionSlot {
    _open: Arc<OpenConnection>,
    /// True once the server is shutting down.
    pub(super) stop: watch::Receiver<bool>,
}

/// One open connection: counted in the open-connections gauge, holding its place under the cap,
/// until dropped (when the connection ends or is aborted at the drain deadline).
struct OpenConnection {
    metrics: Arc<Metrics>,
    name: Listener,
    _permit: OwnedSemaphorePermit,
    /// On its thread's count: a WebSocket still open keeps its thread from stopping.
    _load: Load,
}

impl OpenConnection {
    fn new(
        metrics: Arc<Metrics>,
        name: Listener,
        permit: OwnedSemaphorePermit,
        load: Load,
    ) -> Self {
        metrics.connection_opened(name);
        Self {
            metrics,
            name,
            _permit: permit,
            _load: load,
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.metrics.connection_closed(self.name);
    }
}

/// When a connection last read or wrote a byte, and how many of its requests are in flight.
#[derive(Debug)]
struct Activity {
    opened: Instant,
    /// Milliseconds from `opened` to the last read or write.
    last: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            last: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(last)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    fn request_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }
}

/// A request in flight, until its response is ready (or it is dropped).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A TCP stream that records in its [`Activity`] when it last read or wrote.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        poll
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Raises the soft open-file limit to the hard one if it is lower, and returns the largest
/// connection cap the resulting limit allows (after keeping [`RESERVED_FILES`] free and room
/// for the health listener), `max_connections` if that fits. Logs a warning when it does not.
pub fn fit_file_limit(max_connections: usize, health: bool) -> usize {
    let Some(soft) = raise_file_limit() else {
        return max_connections;
    };
    let health = if health {
        HEALTH_MAX_CONNECTIONS as u64
    } else {
        0
    };
    let budget = soft
        .saturating_sub(RESERVED_FILES + health)
        .max(soft / 2)
        .max(1);
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    if max_connections > budget {
        tracing::warn!(
            requested = max_connections,
            allowed = budget,
            open_file_limit = soft,
            "--max-connections is above what the open-file limit allows; lowered (raise the \
             limit, e.g. LimitNOFILE in systemd or ulimit -n, to allow more)"
        );
        budget
    } else {
        max_connections
    }
}

/// The soft open-file limit after raising it to the hard one; `None` if unlimited or unknown.
#[cfg(unix)]
fn raise_file_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => return limit.maximum,
            Err(err) => {
                tracing::debug!(error = %err, "the open-file limit could not be raised");
            }
        }
    }
    limit.current
}

#[cfg(not(unix))]
fn raise_file_limit() -> Option<u64> {
    None
}
