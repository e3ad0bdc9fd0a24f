//! `agent mcp serve` on stdin/stdout: rmcp's line transport, with a line limit that answers.
//!
//! rmcp drops a line over its limit with a log line, so a client that sent a large request
//! waited forever for the answer. Here every line passes through [`LimitedLines`], which counts
//! it against `serve.max_message_bytes` and reads the request's top-level `id` as it goes
//! ([`IdScanner`], constant memory, wherever the `id` sits in the line). A line over the limit
//! is cut for rmcp (which then ignores the truncated JSON), the rest of it is skipped, and the
//! client gets a JSON-RPC error for that `id`; when no `id` can be read, it gets an error
//! without one and the session closes, with the reason for the command to print.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use rmcp::RoleServer;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// A line that went over the limit: its request id, when one could be read.
#[derive(Debug)]
struct Oversized {
    id: Option<RequestId>,
}

/// The transport `serve` runs on stdio (see the module doc).
pub struct StdioTransport<R: AsyncRead + Unpin + Send + 'static, W: tokio::io::AsyncWrite + Unpin + Send + 'static> {
    inner: AsyncRwTransport<RoleServer, LimitedLines<R>, W>,
    oversized: mpsc::UnboundedReceiver<Oversized>,
    limit: usize,
    /// Why the transport closed the session itself (for the command to print).
    closed: Arc<Mutex<Option<String>>>,
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    /// Lines of `read` over `limit` bytes (newline excluded) are answered, not passed on.
    pub fn new(read: R, write: W, limit: usize, closed: Arc<Mutex<Option<String>>>) -> Self {
        let (tx, oversized) = mpsc::unbounded_channel();
        let lines = LimitedLines::new(read, limit, tx);
        // rmcp's own limit stays above ours: it only ever sees lines that fit.
        let inner = AsyncRwTransport::new(lines, write).with_max_line_length(limit.saturating_add(2));
        StdioTransport { inner, oversized, limit, closed }
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // rmcp's `receive` keeps a partly read line across cancellation, so losing this race
            // to a notice loses nothing.
            let notice = tokio::select! {
                biased;
                Some(n) = self.oversized.recv() => n,
                m = self.inner.receive() => return m,
            };
            let message = format!("request too large: over the {}-byte limit of serve.max_message_bytes", self.limit);
            let answer =
                ServerJsonRpcMessage::error(ErrorData::invalid_request(message.clone(), None), notice.id.clone());
            if self.inner.send(answer).await.is_err() {
                return None;
            }
            if notice.id.is_none() {
                if let Ok(mut c) = self.closed.lock() {
                    *c = Some(format!("{message}, and no request id could be read in it; the session is closed"));
                }
                return None;
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Whether the line is passed on or skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Passing,
    /// Skipping the rest of a line over the limit.
    Skipping,
}

/// An `AsyncRead` of whole lines of at most `limit` bytes (see the module doc).
pub struct LimitedLines<R> {
    inner: R,
    limit: usize,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes of the current line so far (newline excluded).
    line: usize,
    mode: Mode,
    /// The newline that ends a cut line for rmcp, not written yet.
    newline_owed: bool,
    scanner: IdScanner,
    oversized: mpsc::UnboundedSender<Oversized>,
}

impl<R> LimitedLines<R> {
    fn new(inner: R, limit: usize, oversized: mpsc::UnboundedSender<Oversized>) -> Self {
        LimitedLines {
            inner,
            limit,
            buf: vec![0; 64 * 1024].into_boxed_slice(),
            start: 0,
            end: 0,
            line: 0,
            mode: Mode::Passing,
            newline_owed: false,
            scanner: IdScanner::default(),
            oversized,
        }
    }

    /// Moves what is buffered into `out`, line by line; whether anything was written. Stops
    /// only when `out` is full or everything buffered is used up.
    fn drain(&mut self, out: &mut ReadBuf<'_>) -> bool {
        let before = out.filled().len();
        loop {
            if self.newline_owed {
                if out.remaining() == 0 {
                    break;
                }
                out.put_slice(b"\n");
                self.newline_owed = false;
            }
            if self.start == self.end || out.remaining() == 0 {
                break;
            }
            let pending = &self.buf[self.start..self.end];
            let newline = pending.iter().position(|&b| b == b'\n');
            match self.mode {
                Mode::Passing => {
                    let content = newline.unwrap_or(pending.len());
                    let room = self.limit - self.line;
                    if content > room {
                        // Over the limit: pass what fits and end rmcp's line there (the cut
                        // JSON does not parse, so rmcp drops it); skip the rest of the line.
                        let take = room.min(out.remaining());
                        self.scanner.feed(&pending[..take]);
                        out.put_slice(&pending[..take]);
                        self.start += take;
                        self.line += take;
                        if self.line == self.limit {
                            self.newline_owed = true;
                            self.scanner.cut();
                            self.mode = Mode::Skipping;
                        }
                        continue;
                    }
                    let take = (content + usize::from(newline.is_some())).min(out.remaining());
                    let ends = newline.is_some() && take == content + 1;
                    let body = &pending[..take.min(content)];
                    self.scanner.feed(body);
                    self.line += body.len();
                    out.put_slice(&pending[..take]);
                    self.start += take;
                    if ends {
                        self.line = 0;
                        self.scanner = IdScanner::default();
                    }
                }
                Mode::Skipping => {
                    let skip = newline.unwrap_or(pending.len());
                    self.scanner.feed(&pending[..skip]);
                    self.line += skip;
                    self.start += skip;
                    if newline.is_some() {
                        self.start += 1;
                        // A complete message followed by filler reached rmcp whole: it answers.
                        if !self.scanner.complete_before_cut {
                            let _ = self.oversized.send(Oversized { id: self.scanner.id() });
                        }
                        self.line = 0;
                        self.scanner = IdScanner::default();
                        self.mode = Mode::Passing;
                    }
                }
            }
        }
        out.filled().len() > before
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LimitedLines<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.drain(out) || out.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            // Everything buffered was used up (skipped): read more.
            let mut rb = ReadBuf::new(&mut this.buf);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            let n = rb.filled().len();
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
            this.start = 0;
            this.end = n;
        }
    }
}

/// Finds the top-level `"id"` of a JSON object read byte by byte, in constant memory: the
/// nesting depth, whether it is inside a string, the key being read, and the raw text of the
/// `id` value (at most 256 bytes: ids are numbers and short strings).
#[derive(Debug, Default)]
pub struct IdScanner {
    started: bool,
    /// Not a JSON object, or an `id` too long to be one.
    broken: bool,
    /// The top-level object closed.
    closed: bool,
    /// The object closed before the cut (only filler came after it).
    complete_before_cut: bool,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    reading_key: bool,
    /// A key string ended; a `:` follows.
    after_key: bool,
    key: Vec<u8>,
    capture: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
}

const MAX_ID_BYTES: usize = 256;

impl IdScanner {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.broken || self.closed {
            return;
        }
        if !self.started {
            match b {
                b' ' | b'\t' | b'\r' | 0xEF | 0xBB | 0xBF => {}
                b'{' => {
                    self.started = true;
                    self.depth = 1;
                    self.expect_key = true;
                }
                _ => self.broken = true,
            }
            return;
        }
        if let Some(c) = self.capture.as_mut() {
            c.push(b);
            if c.len() > MAX_ID_BYTES {
                self.capture = None;
                self.broken = true;
                return;
            }
        }
        if self.in_string {
            if self.reading_key && !self.escaped && b != b'"' && self.key.len() <= 2 {
                self.key.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.after_key = true;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.reading_key = true;
                    self.key.clear();
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.end_value(1);
                    self.closed = true;
                }
            }
            b':' if self.depth == 1 && self.after_key => {
                self.after_key = false;
                if self.key == b"id" {
                    self.capture = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => {
                self.end_value(1);
                self.expect_key = true;
            }
            _ => {}
        }
    }

    /// The value being captured ended with the byte just pushed (`,` or `}`), `cut` bytes long.
    fn end_value(&mut self, cut: usize) {
        if let Some(mut c) = self.capture.take() {
            c.truncate(c.len().saturating_sub(cut));
            self.id = Some(c);
        }
    }

    /// Marks the point where the line was cut: whether the object was already complete.
    fn cut(&mut self) {
        self.complete_before_cut = self.closed;
    }

    /// The request id read so far (`None`: none, `null`, or not readable); an `id` value that
    /// the end of the line ended counts too.
    pub fn id(&self) -> Option<RequestId> {
        let raw = self.id.as_ref().or(self.capture.as_ref())?;
        serde_json::from_slice::<Option<RequestId>>(raw.trim_ascii()).ok().flatten()
    }
}

impl<R> LimitedLines<R> {
    #[cfg(test)]
    fn for_test(inner: R, limit: usize) -> (Self, mpsc::UnboundedReceiver<Oversized>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (LimitedLines::new(inner, limit, tx), rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(line: &str) -> Option<RequestId> {
        let mut s = IdScanner::default();
        s.feed(line.as_bytes());
        s.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), Some(RequestId::Number(7)));
        assert_eq!(id_of(r#"{"params":{"id":1,"a":[{"id":2}]},"id" : "abc" }"#), Some(RequestId::String("abc".into())));
        assert_eq!(id_of(r#"{"method":"x","params":{"s":"\"id\": 5, }"},"id":9"#), Some(RequestId::Number(9)));
        assert_eq!(id_of(r#"{"params":{"id":1}}"#), None, "a nested id is not the request's");
        assert_eq!(id_of(r#"{"id":null}"#), None);
        assert_eq!(id_of(r#"[{"id":1}]"#), None, "not an object");
        assert_eq!(id_of(&format!(r#"{{"id":"{}"}}"#, "x".repeat(300))), None, "too long to be an id");
        assert_eq!(id_of(r#"{"idx":1,"i":2}"#), None);
    }

    async fn read_all(input: &[u8], limit: usize) -> (String, Vec<Option<RequestId>>) {
        let (mut lines, mut rx) = LimitedLines::for_test(input, limit);
        // A small buffer, as rmcp's reads may be, to cross every boundary.
        let out = crate::util::read::in_small_reads(&mut lines, 7).await;
        let mut ids = Vec::new();
        while let Ok(n) = rx.try_recv() {
            ids.push(n.id);
        }
        (String::from_utf8(out).unwrap(), ids)
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_cut_and_reported_with_their_id() {
        let big =
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"x":"{}"}},"id":42}}"#, "y".repeat(100));
        let input = format!("{{\"id\":1}}\n{big}\n{{\"id\":2}}\n{}\n", "z".repeat(80));
        let (out, ids) = read_all(input.as_bytes(), 40).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], r#"{"id":1}"#);
        assert_eq!(lines[1].len(), 40, "the long line is cut at the limit: {out}");
        assert_eq!(lines[2], r#"{"id":2}"#);
        assert_eq!(lines[3].len(), 40);
        assert_eq!(ids, vec![Some(RequestId::Number(42)), None]);
    }

    #[tokio::test]
    async fn lines_at_the_limit_pass_whole() {
        let line = format!("{{\"id\":3,\"p\":\"{}\"}}", "a".repeat(20));
        let (out, ids) = read_all(format!("{line}\n{line}\n").as_bytes(), line.len()).await;
        assert_eq!(out, format!("{line}\n{line}\n"));
        assert!(ids.is_empty());
    }
}
