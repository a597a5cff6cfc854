import { describe, expect, it } from "vitest";
import { boundedTee } from "./bounded-tee.ts";

function counting(chunks: number) {
  const state = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (state.pulled === chunks) return controller.close();
        controller.enqueue(new Uint8Array([state.pulled++]));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

const drain = async (stream: ReadableStream<Uint8Array>): Promise<number[]> => [
  ...new Uint8Array(await new Response(stream).arrayBuffer()),
];

describe("bounded tee", () => {
  it("gives both readers every chunk, in order", async () => {
    const { stream } = counting(50);
    const [a, b] = boundedTee(stream, 0);
    const [x, y] = await Promise.all([drain(a), drain(b)]);
    expect(x).toEqual([...Array(50).keys()]);
    expect(y).toEqual(x);
  });

  it("with no lead, never reads more than one chunk ahead of the slower reader", async () => {
    const { stream, state } = counting(100);
    const [fast, slow] = boundedTee(stream, 0);
    const done = drain(fast);
    const reader = slow.getReader();
    for (let i = 0; i < 5; i++) {
      await reader.read();
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(state.pulled).toBeLessThanOrEqual(i + 2);
    }
    while (!(await reader.read()).done);
    expect(await done).toHaveLength(100);
  });

  it("lets the faster reader run ahead by the lead, and no further", async () => {
    const { stream, state } = counting(100);
    const [fast, slow] = boundedTee(stream, 10);
    const reader = fast.getReader();
    const got: number[] = [];
    const racing = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        got.push(value[0]!);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Chunks are one byte each: more than 10 bytes queued stops the source.
    expect(state.pulled).toBeGreaterThanOrEqual(10);
    expect(state.pulled).toBeLessThanOrEqual(12);
    await drain(slow);
    await racing;
    expect(got).toEqual([...Array(100).keys()]);
  });

  it("lets one reader go on alone when the other cancels", async () => {
    const { stream } = counting(20);
    const [a, b] = boundedTee(stream, 0);
    const reader = b.getReader();
    await reader.read();
    await reader.cancel();
    expect(await drain(a)).toHaveLength(20);
  });

  it("passes an error to both readers", async () => {
    let n = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (n++ === 3) controller.error(new Error("upstream died"));
        else controller.enqueue(new Uint8Array([n]));
      },
    });
    const [a, b] = boundedTee(failing, 0);
    const results = await Promise.allSettled([drain(a), drain(b)]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  });
});
