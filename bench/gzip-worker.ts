// What gzip costs a worker, measured in the same runtime (workerd):
//   GET /gzip?path=/export.csv?...&compress=1|0
// fetches the export worker's answer for `path` (EXPORT_URL, another wrangler dev) and reads it to the
// end, through CompressionStream("gzip") when compress=1. The bench reads this process's CPU from
// /proc around each request: the difference between the two is gzip's own cost for those bytes.

interface Env {
  EXPORT_URL: string;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname !== "/gzip") return Response.json({ gzip: true });
    const response = await fetch(`${env.EXPORT_URL}${url.searchParams.get("path") ?? "/"}`);
    if (!response.ok || response.body === null)
      return Response.json({ error: `export answered ${response.status}` }, { status: 502 });
    let input = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          input += chunk.byteLength;
          controller.enqueue(chunk);
        },
      }),
    );
    const body =
      url.searchParams.get("compress") === "1"
        ? counted.pipeThrough(new CompressionStream("gzip") as unknown as ReadableWritablePair<Uint8Array, Uint8Array>)
        : counted;
    let output = 0;
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      output += value.byteLength;
    }
    return Response.json({ input, output });
  },
};
