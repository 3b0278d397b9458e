//! A loopback OpenTelemetry collector for the trace tests: `tests/tools/otlp_receiver.py`, which
//! decodes OTLP over HTTP/protobuf and gRPC with OpenTelemetry's own protobuf definitions (PyPI
//! `opentelemetry-proto`) and writes each span it gets as a JSON line.

use std::{
    io::{BufRead, BufReader},
    process::{Child, ChildStdin, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::Value;

use super::tool;

/// The receiver, running until dropped (or after 15 minutes, on its own).
pub struct OtlpReceiver {
    child: Child,
    /// Held open: the receiver stops when it closes.
    _stdin: ChildStdin,
    ports: (u16, u16),
    records: Arc<Mutex<Vec<Value>>>,
}

impl OtlpReceiver {
    /// Starts the receiver and waits for its ports.
    pub fn start() -> Self {
        let mut child = Command::new(tool("python"))
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/tools/otlp_receiver.py"
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the OTLP receiver starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let records = Arc::new(Mutex::new(Vec::new()));
        let (ports_tx, ports_rx) = std::sync::mpsc::channel();
        let kept = Arc::clone(&records);
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
            if let Some(first) = lines.next() {
                let ports: Value = serde_json::from_str(&first).unwrap();
                let port = |name: &str| u16::try_from(ports[name].as_u64().unwrap()).unwrap();
                let _ = ports_tx.send((port("http"), port("grpc")));
            }
            for line in lines {
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_str(&line).unwrap());
            }
        });
        let ports = ports_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the OTLP receiver names its ports");
        Self {
            child,
            _stdin: stdin,
            ports,
            records,
        }
    }

    /// Its OTLP/HTTP endpoint (the base URL, as a collector's port 4318 is given).
    pub fn http_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.0)
    }

    /// Its OTLP/gRPC endpoint (as a collector's port 4317 is given).
    pub fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.1)
    }

    /// Every request it got so far, on any path, whatever it held.
    pub fn requests(&self) -> usize {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter(|record| record.get("request").is_some())
            .count()
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter(|record| record.get("span_id").is_some())
            .cloned()
            .collect()
    }

    /// The spans, once `done` holds of them; fails after a minute (a server exports every
    /// 5 seconds, and at once when it stops).
    pub fn spans_when(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "the spans expected did not arrive; got {spans:#?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
