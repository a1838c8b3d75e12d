// Preload (`node --require ./loopback.cjs ...`) that keeps a server on loopback: every TCP
// `listen` is forced onto 127.0.0.1, whatever host (or none) the program asked for. Once a
// server listens, one line `mcp-harness: listening on 127.0.0.1:PORT` goes to stderr, so a test
// can start a server with PORT=0 and learn the port the kernel picked.
"use strict";
const net = require("node:net");
const dns = require("node:dns");

const LOOPBACK = "127.0.0.1";
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value));
}

// With a host, `listen` resolves it through `dns.lookup` first, which makes even an IP literal
// bind asynchronously; programs that read `server.address()` right after `listen(0)` (as the
// conformance suite does) would then see null. Answer the loopback literal synchronously so
// binding stays as synchronous as it was without a host.
const originalLookup = dns.lookup;
dns.lookup = function patchedLookup(hostname, options, callback) {
  if (hostname === LOOPBACK) {
    if (typeof options === "function") {
      options(null, LOOPBACK, 4);
      return {};
    }
    if (typeof callback === "function") {
      if (options && options.all) {
        callback(null, [{ address: LOOPBACK, family: 4 }]);
      } else {
        callback(null, LOOPBACK, 4);
      }
      return {};
    }
  }
  return originalLookup.apply(this, arguments);
};

net.Server.prototype.listen = function patchedListen(...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    // listen(options[, callback]); a unix socket path (`path`) or a handle is left alone.
    if (first.path === undefined && first.handle === undefined && first.fd === undefined) {
      args[0] = { ...first, host: LOOPBACK, ipv6Only: false };
    }
  } else if (first === undefined || typeof first === "function" || isPort(first)) {
    // listen([port][, host][, backlog][, callback]): drop any host, put loopback in its place.
    const port = isPort(first) ? Number(first) : 0;
    const rest = args.slice(isPort(first) ? 1 : 0);
    if (typeof rest[0] === "string") {
      rest.shift();
    }
    args = [port, LOOPBACK, ...rest];
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`mcp-harness: listening on ${address.address}:${address.port}\n`);
    }
  });
  return originalListen.apply(this, args);
};
