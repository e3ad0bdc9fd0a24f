//! The open HTTP connections of `serve --http`, under a cap that a flood cannot turn against
//! real clients.
//!
//! Each connection counts the requests it has in flight (from the moment its headers are read
//! until its response body is dropped). At the cap, a new connection takes the place of the
//! one that has been idle longest: no request in flight, so a half-open socket, a slow client
//! still sending its headers, or a kept-alive connection between requests; losing it costs a
//! real client at most a reconnect. Only when every connection has a request in flight is the
//! new one refused (the caller answers 503 and closes it). Together with hyper's header
//! timeout this bounds the descriptors and memory that connections take, whoever opens them.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

/// One open connection as the table sees it.
#[derive(Debug)]
pub struct Conn {
    id: u64,
    in_flight: AtomicUsize,
    /// When it last had no request in flight (or was accepted).
    idle_since: Mutex<Instant>,
    /// Cancelled to close it.
    pub close: CancellationToken,
    /// Cancelled once it is closed (its socket dropped).
    pub done: CancellationToken,
}

impl Conn {
    fn idle_since(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        self.idle_since.lock().ok().map(|t| *t)
    }

    /// A request's headers were read: busy until the returned guard (kept by the response body)
    /// is dropped.
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }
}

/// A request in flight on its connection.
#[derive(Debug)]
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.idle_since.lock() {
            *t = Instant::now();
        }
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The table of open connections.
#[derive(Debug)]
pub struct Conns {
    max: usize,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: BTreeMap<u64, Arc<Conn>>,
}

impl Conns {
    pub fn new(max: usize) -> Conns {
        Conns { max: max.max(1), table: Mutex::new(Table::default()) }
    }

    /// Open connections.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.lock().map(|t| t.open.len()).unwrap_or(0)
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes a newly accepted connection in, closing the longest idle one when at the cap (also
    /// returned, so the caller can wait until its socket is gone before accepting more);
    /// `None` when every open connection has a request in flight.
    pub fn admit(&self) -> Option<(Arc<Conn>, Option<Arc<Conn>>)> {
        let mut t = self.table.lock().ok()?;
        let mut evicted = None;
        if t.open.len() >= self.max {
            let oldest = t.open.values().filter_map(|c| Some((c.idle_since()?, c.id))).min().map(|(_, id)| id)?;
            if let Some(c) = t.open.remove(&oldest) {
                tracing::debug!("connection limit ({}) reached: closing the connection idle longest", self.max);
                c.close.cancel();
                evicted = Some(c);
            }
        }
        t.next += 1;
        let conn = Arc::new(Conn {
            id: t.next,
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            close: CancellationToken::new(),
            done: CancellationToken::new(),
        });
        t.open.insert(conn.id, conn.clone());
        Some((conn, evicted))
    }

    /// The connection ended (its socket is closed).
    pub fn remove(&self, conn: &Conn) {
        if let Ok(mut t) = self.table.lock() {
            t.open.remove(&conn.id);
        }
        conn.done.cancel();
    }
}

/// A response body that keeps its connection busy until it is dropped (sent or abandoned).
pub struct Tracked<B> {
    inner: B,
    _busy: Busy,
}

impl<B> Tracked<B> {
    pub fn new(inner: B, busy: Busy) -> Self {
        Tracked { inner, _busy: busy }
    }
}

impl<B: hyper::body::Body<Data = Bytes> + Unpin> hyper::body::Body for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room_and_busy_ones_never_do() {
        let conns = Conns::new(2);
        let (a, _) = conns.admit().unwrap();
        let (b, _) = conns.admit().unwrap();
        let busy_a = a.begin();
        let (c, evicted) = conns.admit().unwrap();
        assert!(b.close.is_cancelled(), "b was idle: it made room");
        assert_eq!(evicted.map(|e| e.id), Some(b.id));
        assert!(!a.close.is_cancelled());
        assert_eq!(conns.len(), 2);
        let busy_c = c.begin();
        assert!(conns.admit().is_none(), "every connection is busy: the new one is refused");
        drop(busy_a);
        let (d, _) = conns.admit().unwrap();
        assert!(a.close.is_cancelled(), "a became idle");
        assert!(!c.close.is_cancelled() && !d.close.is_cancelled());
        drop(busy_c);
        conns.remove(&c);
        conns.remove(&d);
        assert!(conns.is_empty());
    }
}
