// The user worker's isolate as V8 counts it, read over the Chrome DevTools Protocol that
// `wrangler dev --inspector-port` serves: `Runtime.getHeapUsage` gives the JavaScript heap in use
// and the ArrayBuffer backing store (which lives outside that heap but in the same 128 MB of a
// production isolate). RSS cannot tell them apart from workerd's own memory; this can.

export interface HeapPeak {
  /** Largest `usedSize` seen, bytes. */
  heap: number;
  /** Largest `backingStorageSize` seen, bytes. */
  arrayBuffers: number;
  /** Largest sum of the two seen in one sample, bytes. */
  total: number;
  samples: number;
  /**
   * Largest `usedSize` read right after a collection the sampler forced (only when asked for, see
   * heapSampler): what the isolate holds live, without the garbage V8 had not yet collected. Absent
   * when no collection was asked for or answered.
   */
  live?: number;
}

interface HeapUsage {
  usedSize: number;
  totalSize: number;
  backingStorageSize?: number;
}

export interface HeapSampler {
  /** Starts sampling afresh (runs use fresh processes, so no run inherits another's garbage). */
  start(): Promise<void>;
  /** Stops sampling and gives the peaks since `start`. */
  stop(): Promise<HeapPeak>;
  close(): void;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Samples every `everyMs` (one request in flight at a time: a busy isolate answers between tasks).
 * With `liveEveryMs`, also forces a full collection that often (HeapProfiler.collectGarbage) and
 * reads the heap right after it: the live peak. Those collections cost the isolate CPU and lower
 * the plain peak too, so a run that asks for them measures nothing else.
 */
export async function heapSampler(inspectorPort: number, everyMs = 5, liveEveryMs = 0): Promise<HeapSampler> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as {
    webSocketDebuggerUrl?: string;
    title?: string;
  }[];
  // wrangler lists the user worker first; its own proxy worker is not listed.
  const target = targets.find((t) => t.webSocketDebuggerUrl !== undefined);
  if (target?.webSocketDebuggerUrl === undefined)
    throw new Error(`no inspector target on port ${inspectorPort}: ${JSON.stringify(targets)}`);
  // wrangler's proxy refuses a client that sends a User-Agent without an Origin (a browser page
  // elsewhere); Node's WebSocket takes extra headers as an option beside the protocols.
  const WithHeaders = WebSocket as unknown as new (url: string, init: { headers: Record<string, string> }) => WebSocket;
  const socket = new WithHeaders(target.webSocketDebuggerUrl, { headers: { origin: "http://localhost" } });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error("the inspector's WebSocket failed to open")), {
      once: true,
    });
  });
  let nextId = 0;
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (message.id === undefined) return;
    const call = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error) call?.reject(new Error(message.error.message));
    else call?.resolve(message.result);
  });
  const closed = new Promise<void>((resolve) => socket.addEventListener("close", () => resolve(), { once: true }));
  void closed.then(() => {
    for (const call of waiting.values()) call.reject(new Error("the inspector closed (the isolate died?)"));
    waiting.clear();
  });
  const call = <T>(method: string, waitMs = 30_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++nextId;
      // An isolate that stops answering (killed mid-call) must not hang the run.
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`${method}: no answer from the inspector`));
      }, waitMs);
      waiting.set(id, {
        resolve: (value) => (clearTimeout(timer), resolve(value as T)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      });
      socket.send(JSON.stringify({ id, method }));
    });

  // The proxy leaves a first collectGarbage unanswered (seen with wrangler 4); later ones answer.
  const collect = (): Promise<boolean> =>
    call("HeapProfiler.collectGarbage", 5_000).then(
      () => true,
      () => false,
    );
  if (liveEveryMs > 0) await collect();

  let running = false;
  let loop: Promise<void> = Promise.resolve();
  let peak: HeapPeak = { heap: 0, arrayBuffers: 0, total: 0, samples: 0 };
  /** The heap right after a forced collection, into `peak.live`. */
  const readLive = async (): Promise<void> => {
    if (!(await collect())) return;
    const { usedSize } = await call<HeapUsage>("Runtime.getHeapUsage");
    peak.live = Math.max(peak.live ?? 0, usedSize);
  };
  return {
    async start() {
      peak = { heap: 0, arrayBuffers: 0, total: 0, samples: 0 };
      running = true;
      let lastLive = performance.now();
      loop = (async () => {
        while (running) {
          try {
            const usage = await call<HeapUsage>("Runtime.getHeapUsage");
            const buffers = usage.backingStorageSize ?? 0;
            peak.heap = Math.max(peak.heap, usage.usedSize);
            peak.arrayBuffers = Math.max(peak.arrayBuffers, buffers);
            peak.total = Math.max(peak.total, usage.usedSize + buffers);
            peak.samples++;
            if (liveEveryMs > 0 && performance.now() - lastLive >= liveEveryMs) {
              await readLive();
              lastLive = performance.now();
            }
          } catch {
            return; // the isolate is gone: the peaks so far stand
          }
          await sleep(everyMs);
        }
      })();
    },
    async stop() {
      running = false;
      await loop;
      return { ...peak };
    },
    close() {
      running = false;
      socket.close();
    },
  };
}
