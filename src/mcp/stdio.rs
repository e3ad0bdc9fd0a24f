//! The stdio transport of a child server, with its pipes wired here rather than by rmcp's
//! `TokioChildProcess`, so that a message over `mcp.max_result_bytes` fails its call at once
//! (the Streamable HTTP client does the same with [`ResultCap`], see `http`).
//!
//! rmcp's line reader drops an over-long line with only a log line, so the call it answered
//! would wait for its `call_timeout`. [`CappedReader`] sits between the child's stdout and
//! rmcp: lines up to the limit pass through untouched; the first `limit` bytes of a longer line
//! are passed on and cut off with a newline (rmcp ignores the unparsable fragment), the rest is
//! dropped as it arrives (never buffered), and the dropped message's JSON-RPC `id` is looked for
//! at the start of the line (rmcp, Python SDK) and at its very end (the TypeScript SDK writes
//! `id` last). With an id, a JSON-RPC error answer for that id, marked with a per-connection
//! nonce, takes the message's place, so rmcp completes the call and the manager recognises the
//! error as [`ResultCap::is_ours`]. Without one, every call in flight on the server is told
//! through [`ResultCap::subscribe`]. The connection stays usable either way.

use std::borrow::Cow;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::model::ErrorData;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::broadcast;

/// Bytes kept from the start and from the end of a line to find its `id`.
const ID_WINDOW: usize = 256;
/// Read size from the child's stdout.
const READ_CHUNK: usize = 64 * 1024;
/// The `data` key of the error answers this module writes in place of a dropped message.
const NONCE_KEY: &str = "agentResultCap";

/// The size limit of one connection's messages, and how its callers learn that a message was
/// dropped.
pub struct ResultCap {
    pub limit: usize,
    nonce: String,
    all_in_flight: broadcast::Sender<()>,
}

impl ResultCap {
    pub fn new(limit: usize) -> Arc<ResultCap> {
        let nonce = format!("{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>());
        Arc::new(ResultCap { limit, nonce, all_in_flight: broadcast::channel(4).0 })
    }

    /// Subscribe before sending a request; [`all_in_flight_failed`] on the receiver then
    /// completes when an over-long message whose request could not be told was dropped.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.all_in_flight.subscribe()
    }

    /// Whether `e` is the answer this module wrote in place of a dropped message (a server
    /// cannot forge it: it does not know the nonce).
    pub fn is_ours(&self, e: &ErrorData) -> bool {
        e.data.as_ref().and_then(|d| d.get(NONCE_KEY)).and_then(|v| v.as_str()) == Some(self.nonce.as_str())
    }

    /// The error that takes a dropped answer's place (marked with the nonce).
    pub fn error_data(&self) -> ErrorData {
        ErrorData::internal_error(
            format!("the response is larger than the {} limit", size_label(self.limit)),
            Some(serde_json::json!({ NONCE_KEY: self.nonce })),
        )
    }

    /// Fails every call in flight (an over-long message that answers no known request).
    pub fn fail_all_in_flight(&self) {
        let _ = self.all_in_flight.send(());
    }

    fn error_line(&self, id: &[u8]) -> Vec<u8> {
        let error = serde_json::to_value(self.error_data()).unwrap_or_default();
        let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
        line.extend_from_slice(id);
        line.extend_from_slice(b",\"error\":");
        line.extend_from_slice(error.to_string().as_bytes());
        line.extend_from_slice(b"}\n");
        line
    }
}

/// Completes when every call in flight has to fail (see [`ResultCap::subscribe`]); never
/// completes once the connection is gone.
pub async fn all_in_flight_failed(rx: &mut broadcast::Receiver<()>) {
    loop {
        match rx.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// `16 MiB`, `512 KiB` or `1000 bytes`.
pub fn size_label(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// An `AsyncRead` over a child's stdout that never lets a line longer than the cap through
/// (see the module doc).
pub struct CappedReader<R> {
    inner: R,
    cap: Arc<ResultCap>,
    server: String,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes this reader adds to the stream (a cut line's newline, an error answer).
    out: Vec<u8>,
    out_pos: usize,
    line: LineTrack,
    discarding: bool,
}

/// What is kept of the current line: its length so far and its first and last bytes.
#[derive(Default)]
struct LineTrack {
    /// Content bytes seen so far (passed on or dropped).
    len: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl LineTrack {
    fn note(&mut self, content: &[u8]) {
        if self.head.len() < ID_WINDOW {
            let take = (ID_WINDOW - self.head.len()).min(content.len());
            self.head.extend_from_slice(&content[..take]);
        }
        if content.len() >= ID_WINDOW {
            self.tail.clear();
            self.tail.extend_from_slice(&content[content.len() - ID_WINDOW..]);
        } else {
            self.tail.extend_from_slice(content);
            if self.tail.len() > 2 * ID_WINDOW {
                self.tail.drain(..self.tail.len() - ID_WINDOW);
            }
        }
        self.len = self.len.saturating_add(content.len());
    }
}

impl<R> CappedReader<R> {
    pub fn new(inner: R, cap: Arc<ResultCap>, server: &str) -> CappedReader<R> {
        CappedReader {
            inner,
            cap,
            server: server.to_string(),
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            out: Vec::new(),
            out_pos: 0,
            line: LineTrack::default(),
            discarding: false,
        }
    }

    fn end_line(&mut self) {
        self.line = LineTrack::default();
        self.discarding = false;
    }

    /// The over-long line just ended: answer its request, or fail everything in flight.
    fn finish_dropped(&mut self) {
        let size = self.line.len;
        match classify(&self.line.head, &self.line.tail) {
            Dropped::Response(id) => {
                tracing::info!(
                    server = %self.server,
                    bytes = size,
                    limit = self.cap.limit,
                    id = %String::from_utf8_lossy(&id),
                    "dropped a response over the size limit"
                );
                let line = self.cap.error_line(&id);
                self.out.extend_from_slice(&line);
            }
            Dropped::NotAResponse => {
                tracing::info!(server = %self.server, bytes = size, limit = self.cap.limit, "dropped a server message over the size limit");
            }
            Dropped::Unknown => {
                tracing::info!(
                    server = %self.server,
                    bytes = size,
                    limit = self.cap.limit,
                    "dropped a message over the size limit without a readable id; failing every call in flight"
                );
                self.cap.fail_all_in_flight();
            }
        }
        self.end_line();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CappedReader<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.out_pos < this.out.len() {
                let n = dst.remaining().min(this.out.len() - this.out_pos);
                dst.put_slice(&this.out[this.out_pos..this.out_pos + n]);
                this.out_pos += n;
                if this.out_pos == this.out.len() {
                    this.out.clear();
                    this.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut rb = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
                let n = rb.filled().len();
                if n == 0 {
                    return Poll::Ready(Ok(()));
                }
                this.start = 0;
                this.end = n;
            }
            let (start, end) = (this.start, this.end);
            let newline = this.buf[start..end].iter().position(|&b| b == b'\n');
            let content = newline.unwrap_or(end - start);
            let segment = newline.map_or(end - start, |i| i + 1);
            if this.discarding {
                this.line.note(&this.buf[start..start + content]);
                this.start += segment;
                if newline.is_some() {
                    this.finish_dropped();
                }
                continue;
            }
            if this.line.len.saturating_add(content) <= this.cap.limit {
                let n = dst.remaining().min(segment);
                dst.put_slice(&this.buf[start..start + n]);
                this.line.note(&this.buf[start..start + n.min(content)]);
                this.start += n;
                if newline.is_some() && n == segment {
                    this.end_line();
                }
                return Poll::Ready(Ok(()));
            }
            // Over the limit: pass on what fits, cut the line there, drop the rest.
            let fits = this.cap.limit - this.line.len;
            this.out.extend_from_slice(&this.buf[start..start + fits]);
            this.out.push(b'\n');
            this.line.note(&this.buf[start..start + content]);
            this.start += segment;
            if newline.is_some() {
                this.finish_dropped();
            } else {
                this.discarding = true;
            }
        }
    }
}

/// What an over-long line was, judging by its first and last bytes.
#[derive(Debug, PartialEq)]
enum Dropped {
    /// A response or error answer; the raw JSON text of its id.
    Response(Vec<u8>),
    /// A request or notification from the server (nobody waits for it).
    NotAResponse,
    /// No id found.
    Unknown,
}

fn classify(head: &[u8], tail: &[u8]) -> Dropped {
    let keys = top_level_keys(head);
    if keys.iter().any(|(k, _)| k == "method") {
        return Dropped::NotAResponse;
    }
    if let Some((_, Some(id))) = keys.into_iter().find(|(k, _)| k == "id") {
        return Dropped::Response(id);
    }
    trailing_id(tail).map_or(Dropped::Unknown, Dropped::Response)
}

/// The keys of the top-level object seen in `head` (the start of a line), each with its value's
/// raw text when it is a plain id (an integer, or a string without escapes).
fn top_level_keys(head: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
    let mut keys = Vec::new();
    let mut i = head.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(head.len());
    if head.get(i) != Some(&b'{') {
        return keys;
    }
    i += 1;
    let mut depth = 1usize;
    let mut expect_key = true;
    while i < head.len() {
        match head[i] {
            b'"' => {
                let Some(len) = head[i + 1..].iter().position(|&b| b == b'"') else { break };
                let text = &head[i + 1..i + 1 + len];
                let escaped = text.contains(&b'\\');
                if escaped {
                    // Skip a string with escapes properly; it is never a key we look for.
                    let mut j = i + 1;
                    while j < head.len() && head[j] != b'"' {
                        j += if head[j] == b'\\' { 2 } else { 1 };
                    }
                    i = j + 1;
                    expect_key = false;
                    continue;
                }
                i += len + 2;
                if depth == 1 && expect_key {
                    let mut j = i;
                    while j < head.len() && head[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if head.get(j) == Some(&b':') {
                        let key = String::from_utf8_lossy(text).into_owned();
                        let value = plain_id_at(&head[j + 1..]);
                        keys.push((key, value));
                        i = j + 1;
                    }
                }
                expect_key = false;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
                i += 1;
            }
            b',' => {
                expect_key = depth == 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    keys
}

/// An integer or an escape-free string at the start of `s` (after whitespace), followed by a
/// delimiter; its raw text.
fn plain_id_at(s: &[u8]) -> Option<Vec<u8>> {
    let start = s.iter().position(|b| !b.is_ascii_whitespace())?;
    let s = &s[start..];
    let len = if s.first() == Some(&b'"') {
        let close = s[1..].iter().position(|&b| b == b'"')? + 2;
        if s[..close].contains(&b'\\') {
            return None;
        }
        close
    } else {
        let digits = s.iter().position(|&b| !(b.is_ascii_digit() || b == b'-'))?;
        if digits == 0 {
            return None;
        }
        digits
    };
    let after = s[len..].iter().find(|b| !b.is_ascii_whitespace())?;
    (matches!(after, b',' | b'}') && len <= 128).then(|| s[..len].to_vec())
}

/// The id when the line ends with `"id": <integer or plain string>}` (the top-level object's
/// last key: nothing closes between it and the final brace).
fn trailing_id(tail: &[u8]) -> Option<Vec<u8>> {
    let s = trim_end(tail);
    let s = trim_end(s.strip_suffix(b"}")?);
    let value_start = if s.last() == Some(&b'"') {
        let open = s[..s.len() - 1].iter().rposition(|&b| b == b'"')?;
        if open > 0 && s[open - 1] == b'\\' {
            return None;
        }
        open
    } else {
        let n = s.iter().rev().take_while(|b| b.is_ascii_digit() || **b == b'-').count();
        if n == 0 {
            return None;
        }
        s.len() - n
    };
    let value = &s[value_start..];
    let before = trim_end(&s[..value_start]);
    let before = trim_end(before.strip_suffix(b":")?);
    let before = before.strip_suffix(b"\"id\"")?;
    matches!(trim_end(before).last(), Some(b',' | b'{')).then(|| value.to_vec())
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
    &s[..s.len() - n]
}

/// A child server's stdio as an rmcp client transport: writes go to its stdin, reads come
/// through a [`CappedReader`] over its stdout. Dropping it kills the child (its process group).
pub struct ChildTransport {
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, CappedReader<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// Takes the pipes of a child spawned with piped stdin and stdout.
    pub fn new(mut child: Box<dyn ChildWrapper>, cap: Arc<ResultCap>, server: &str) -> io::Result<ChildTransport> {
        let stdin = child.stdin().take().ok_or_else(|| io::Error::other("the child's stdin is not a pipe"))?;
        let stdout = child.stdout().take().ok_or_else(|| io::Error::other("the child's stdout is not a pipe"))?;
        // The reader keeps every line within the cap (plus its newline); rmcp's own check,
        // which drops a line silently, must never fire.
        let max_line = cap.limit.saturating_add(64);
        let reader = CappedReader::new(stdout, cap, server);
        let transport = AsyncRwTransport::new_client(reader, stdin).with_max_line_length(max_line);
        Ok(ChildTransport { child: Some(child), transport })
    }

    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
        }
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes the child's stdin and gives it a moment to exit; the manager's shutdown signals
    /// its process group, and `Drop` kills whatever is left.
    async fn close(&mut self) -> Result<(), io::Error> {
        self.transport.close().await?;
        if let Some(child) = self.child.as_mut()
            && let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(3), child.wait()).await
        {
            self.child = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Dropped {
        Dropped::Response(s.as_bytes().to_vec())
    }

    #[test]
    fn ids_at_the_start_or_the_end_of_a_line() {
        let c = |line: &str| {
            let b = line.as_bytes();
            classify(&b[..b.len().min(ID_WINDOW)], &b[b.len().saturating_sub(ID_WINDOW)..])
        };
        let pad = "x".repeat(1000);
        assert_eq!(c(&format!(r#"{{"jsonrpc":"2.0","id":17,"result":{{"t":"{pad}"#)), id("17"));
        assert_eq!(c(&format!(r#"{{ "jsonrpc": "2.0", "id" : "a-1", "result": {{"t":"{pad}"#)), id("\"a-1\""));
        assert_eq!(c(&format!(r#"{{"result":{{"content":[{{"text":"{pad}"}}]}},"jsonrpc":"2.0","id":4}}"#)), id("4"));
        assert_eq!(c(&format!("{{\"result\":{{\"t\":\"{pad}\"}},\"id\": \"x\" }}\r")), id("\"x\""));
        // A nested `id` is not the message's.
        assert_eq!(c(&format!(r#"{{"result":{{"t":"{pad}","item":{{"id":9}}}},"jsonrpc":"2.0"}}"#)), Dropped::Unknown);
        assert_eq!(c(&format!(r#"{{"result":{{"item":{{"id":9,"t":"{pad}"}}}},"jsonrpc":"2.0"}}"#)), Dropped::Unknown);
        // An escaped `"id":` inside a string is text.
        assert_eq!(c(&format!(r#"{{"result":{{"t":"{pad} \"id\":5"}},"jsonrpc":"2.0"}}"#)), Dropped::Unknown);
        assert_eq!(c(&format!(r#"{{"result":{{"t":"{pad}"}},"id":3,"jsonrpc":"2.0"}}"#)), Dropped::Unknown);
        // Requests and notifications from the server are nobody's answer.
        assert_eq!(
            c(&format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{pad}"}}}}"#)),
            Dropped::NotAResponse
        );
        assert_eq!(
            c(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{{"x":"{pad}"}}}}"#)),
            Dropped::NotAResponse
        );
        assert_eq!(c(&pad), Dropped::Unknown);
    }

    /// Hands out its bytes 7 at a time.
    struct Trickle(Vec<u8>, usize);

    impl AsyncRead for Trickle {
        fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let n = (self.0.len() - self.1).min(7).min(dst.remaining());
            let at = self.1;
            dst.put_slice(&self.0[at..at + n]);
            self.1 += n;
            Poll::Ready(Ok(()))
        }
    }

    async fn read_all(input: Vec<u8>, limit: usize) -> (Vec<u8>, Arc<ResultCap>, bool) {
        let cap = ResultCap::new(limit);
        let mut rx = cap.subscribe();
        // Small reads from the inner stream and into a small buffer exercise every boundary.
        let inner = Trickle(input, 0);
        let mut reader = CappedReader::new(inner, cap.clone(), "t");
        let out = crate::util::read::in_small_reads(&mut reader, 5).await;
        let failed_all = rx.try_recv().is_ok();
        (out, cap, failed_all)
    }

    #[tokio::test]
    async fn over_long_lines_are_cut_and_answered() {
        let big = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"t":"{}"}}}}"#, "y".repeat(300));
        let input = format!("{{\"a\":1}}\n{big}\n{{\"b\":2}}\n");
        let (out, cap, failed_all) = read_all(input.into_bytes(), 100).await;
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], "{\"a\":1}");
        assert_eq!(lines[1], &big[..100], "the first `limit` bytes, cut");
        let answer: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(answer["id"], 7);
        let e: ErrorData = serde_json::from_value(answer["error"].clone()).unwrap();
        assert!(cap.is_ours(&e));
        assert_eq!(e.message, "the response is larger than the 100 bytes limit");
        assert_eq!(lines[3], "{\"b\":2}");
        assert!(!failed_all);

        // Exactly the limit passes; no id anywhere fails everything in flight.
        let exact = "z".repeat(100);
        let (out, _, failed_all) = read_all(format!("{exact}\n{}\n", "q".repeat(500)).into_bytes(), 100).await;
        assert_eq!(String::from_utf8(out).unwrap(), format!("{exact}\n{}\n", "q".repeat(100)));
        assert!(failed_all);
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(16 << 20), "16 MiB");
        assert_eq!(size_label(512 << 10), "512 KiB");
        assert_eq!(size_label(1000), "1000 bytes");
    }
}
