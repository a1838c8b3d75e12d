//! A session's input that says when it ends: the client closed it, or died. rmcp then waits
//! up to 5 s for the answers of the calls in flight before it ends the session; the session's
//! calls are given up at once instead, so a client that went away costs nothing.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// `inner`, which sets `ended` once it reads its end (or fails).
pub(crate) struct Watched<R> {
    inner: R,
    ended: Arc<watch::Sender<bool>>,
}

impl<R> Watched<R> {
    pub(crate) fn new(inner: R, ended: Arc<watch::Sender<bool>>) -> Self {
        Self { inner, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let (before, room) = (buf.filled().len(), buf.remaining());
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(result) = &poll
            && (result.is_err() || (room > 0 && buf.filled().len() == before))
        {
            self.ended.send_replace(true);
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    #[tokio::test]
    async fn the_end_is_told_once_the_input_ends_and_not_before() {
        let (mut client, server) = tokio::io::duplex(64);
        let ended = Arc::new(watch::Sender::new(false));
        let mut read = Watched::new(server, ended.clone());
        client.write_all(b"{}\n").await.expect("write");
        let mut buf = [0u8; 16];
        assert_eq!(read.read(&mut buf).await.expect("read"), 3);
        // A read into no room is not the end.
        assert_eq!(read.read(&mut []).await.expect("read"), 0);
        assert!(!*ended.borrow(), "still open");
        drop(client);
        assert_eq!(read.read(&mut buf).await.expect("read"), 0);
        assert!(*ended.borrow(), "ended");
    }
}
