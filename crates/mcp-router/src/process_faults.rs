//! What the demo server's fault tools do to a process of this crate's binaries: `crash` exits
//! at once (status 3), `garbage` writes a non-JSON-RPC line to stdout.

/// The running process.
pub(crate) struct ThisProcess;

impl demo_server::ProcessFaults for ThisProcess {
    fn crash(&self) -> ! {
        std::process::exit(3)
    }

    fn write_garbage(&self) {
        println!("this is not JSON-RPC {{{{{{");
    }
}
