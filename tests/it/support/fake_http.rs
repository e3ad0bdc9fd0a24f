//! The HTTP/1 server under the scripted fakes (`fake_llm`, `fake_embeddings`): 127.0.0.1 on a
//! free port, its own thread and runtime, one handler for every request; stopped on drop.

#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

pub struct HttpServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpServer {
    /// Serves `handle` until dropped.
    pub fn start<F, Fut, B, E>(handle: F) -> HttpServer
    where
        F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Response<B>, E>> + Send + 'static,
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                addr_tx.send(listener.local_addr().expect("addr")).expect("send addr");
                loop {
                    tokio::select! {
                        _ = &mut stop_rx => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let handle = handle.clone();
                            tokio::spawn(async move {
                                let svc = hyper::service::service_fn(handle);
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), svc)
                                    .await;
                            });
                        }
                    }
                }
            });
        });
        let addr = addr_rx.recv().expect("fake server address");
        HttpServer { addr, stop: Some(stop_tx), thread: Some(thread) }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
