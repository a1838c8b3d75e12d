// A loopback HTTP proxy that adds `Authorization: Bearer <secret>` to every request it forwards,
// for clients that cannot send a header of their own (the conformance suite's server scenarios)
// against `mcp-router serve --listen`, whose listener needs its secret.
// Usage: node bearer-proxy.cjs TARGET_URL SECRET_FILE
// Prints `listening on http://127.0.0.1:PORT/PATH` (the target's path) once it listens; every
// other header, the body and the streamed answer pass through unchanged.
"use strict";
const http = require("node:http");
const fs = require("node:fs");

const [target, secretFile] = process.argv.slice(2);
if (!target || !secretFile) {
  console.error("usage: node bearer-proxy.cjs TARGET_URL SECRET_FILE");
  process.exit(2);
}
const upstream = new URL(target);
if (upstream.hostname !== "127.0.0.1") {
  console.error("bearer-proxy: the target must be on 127.0.0.1");
  process.exit(2);
}
const secret = fs.readFileSync(secretFile, "utf8").trim();

const server = http.createServer((request, response) => {
  const headers = { ...request.headers, authorization: `Bearer ${secret}` };
  const forwarded = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: request.method,
      path: request.url,
      headers,
    },
    (answer) => {
      response.writeHead(answer.statusCode, answer.headers);
      answer.pipe(response);
    },
  );
  forwarded.on("error", (error) => {
    if (!response.headersSent) {
      response.writeHead(502, { "content-type": "text/plain" });
    }
    response.end(`bearer-proxy: ${error.message}`);
  });
  request.pipe(forwarded);
  response.on("close", () => forwarded.destroy());
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  console.log(`listening on http://127.0.0.1:${port}${upstream.pathname}`);
});
