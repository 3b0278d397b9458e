//! The loopback proxy that delays each direction by a fixed time, a stand-in for the distance to
//! a real DynamoDB region.

use std::time::{Duration, Instant};

use anyhow::Context;

/// A TCP proxy on 127.0.0.1 in front of DynamoDB Local that delivers every chunk `delay` after
/// it arrived, in each direction, keeping order: a fixed one-way latency, like a network link.
/// Written here because it is a few lines on tokio; the test suite's fault proxy lives in the
/// test crate, which a bench cannot import.
pub(super) struct DelayProxy;

impl DelayProxy {
    /// Starts the proxy; its endpoint URL.
    pub(super) async fn start(endpoint: &str, delay: Duration) -> anyhow::Result<String> {
        let upstream = endpoint
            .strip_prefix("http://")
            .context("an http:// endpoint")?
            .to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        Self::pump(client_read, server_write, delay),
                        Self::pump(server_read, client_write, delay)
                    );
                });
            }
        });
        Ok(format!("http://{address}"))
    }

    /// Copies `from` to `to`, each chunk `delay` after it was read.
    async fn pump(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        delay: Duration,
    ) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
        let writer = async move {
            while let Some((due, chunk)) = rx.recv().await {
                tokio::time::sleep_until(due.into()).await;
                if to.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            let _ = to.shutdown().await;
        };
        let reader = async move {
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n) = from.read(&mut buf).await {
                if n == 0
                    || tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                {
                    break;
                }
            }
        };
        tokio::join!(reader, writer);
    }
}
