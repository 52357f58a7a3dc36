//! This process's standard input and output as async streams, read and written by the
//! runtime's reactor when they are pipes or sockets.
//!
//! `tokio::io::stdin()` and `stdout()` do every read and write on the blocking thread pool:
//! each MCP message then costs two thread hand-offs, and on a small machine those
//! hand-offs, not the work, are most of a served call's time. An MCP client starts a server
//! with pipes (or, from Node, a socket pair) as its standard streams; those can be made
//! non-blocking and polled like any socket. Anything else (a terminal, a file) keeps tokio's
//! standard streams.

use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};

/// A standard stream to read.
pub(crate) type Input = Pin<Box<dyn AsyncRead + Send>>;
/// A standard stream to write.
pub(crate) type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// Standard input and output, on the reactor where they can be (see the module's docs).
///
/// Must be called from a runtime with I/O enabled, as `#[tokio::main]` makes.
pub(crate) fn std_streams() -> (Input, Output) {
    let input = reactor::input().unwrap_or_else(|| Box::pin(tokio::io::stdin()));
    let output = reactor::output().unwrap_or_else(|| Box::pin(tokio::io::stdout()));
    (input, output)
}

/// Puts standard input and output back in blocking mode (the mode is shared with every
/// process that holds them, and the rest of this program may write with `println!`).
pub(crate) fn restore_blocking() {
    reactor::restore_blocking();
}

#[cfg(unix)]
mod reactor {
    use std::fs::File;
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;

    use tokio::net::unix::pipe;

    use super::{Input, Output};

    /// What kind of stream a descriptor is, with a copy of it to own.
    enum Kind {
        Pipe(File),
        Socket(OwnedFd),
    }

    fn kind(fd: BorrowedFd<'_>) -> Option<Kind> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = File::from(owned);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            Some(Kind::Pipe(file))
        } else if kind.is_socket() {
            Some(Kind::Socket(file.into()))
        } else {
            None
        }
    }

    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    pub(super) fn input() -> Option<Input> {
        match kind(std::io::stdin().as_fd())? {
            Kind::Pipe(file) => Some(Box::pin(pipe::Receiver::from_file(file).ok()?)),
            Kind::Socket(fd) => Some(Box::pin(socket(fd)?)),
        }
    }

    pub(super) fn output() -> Option<Output> {
        match kind(std::io::stdout().as_fd())? {
            Kind::Pipe(file) => Some(Box::pin(pipe::Sender::from_file(file).ok()?)),
            Kind::Socket(fd) => Some(Box::pin(socket(fd)?)),
        }
    }

    pub(super) fn restore_blocking() {
        // A copy of the descriptor shares its mode; tokio's pipe types clear the flag when
        // they give their descriptor back as blocking.
        match kind(std::io::stdin().as_fd()) {
            Some(Kind::Pipe(file)) => {
                let _ = pipe::Receiver::from_file_unchecked(file).map(|p| p.into_blocking_fd());
            }
            Some(Kind::Socket(fd)) => {
                let _ = std::os::unix::net::UnixStream::from(fd).set_nonblocking(false);
            }
            None => {}
        }
        match kind(std::io::stdout().as_fd()) {
            Some(Kind::Pipe(file)) => {
                let _ = pipe::Sender::from_file_unchecked(file).map(|p| p.into_blocking_fd());
            }
            Some(Kind::Socket(fd)) => {
                let _ = std::os::unix::net::UnixStream::from(fd).set_nonblocking(false);
            }
            None => {}
        }
    }
}

#[cfg(not(unix))]
mod reactor {
    use super::{Input, Output};

    pub(super) fn input() -> Option<Input> {
        None
    }

    pub(super) fn output() -> Option<Output> {
        None
    }

    pub(super) fn restore_blocking() {}
}
