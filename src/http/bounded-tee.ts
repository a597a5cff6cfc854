type Read = ReadableStreamReadResult<Uint8Array>;

/**
 * Two readers of one stream, the faster at most `maxLead` bytes ahead of the slower. Memory is
 * bounded by that lead whoever is slower: `ReadableStream.tee()` instead buffers everything the
 * faster reader is ahead by, which for a fast client and a slow cache (or the reverse) is the whole
 * export. A reader that cancels drops out; the other carries on alone.
 */
export function boundedTee(
  source: ReadableStream<Uint8Array>,
  maxLead: number,
): [ReadableStream<Uint8Array>, ReadableStream<Uint8Array>] {
  const reader = source.getReader();
  /** Chunks read from the source and not yet taken by every live reader; `base` is the first one's index. */
  const queue: Promise<Read>[] = [];
  const sizes: number[] = [];
  let base = 0;
  let queued = 0;
  const cursor = [0, 0];
  const live = new Set<number>([0, 1]);
  let wake: () => void = () => {};
  let changed = new Promise<void>((resolve) => (wake = resolve));
  const notify = (): void => {
    const resolve = wake;
    changed = new Promise<void>((r) => (wake = r));
    resolve();
  };

  /** Drops chunks every live reader has passed. */
  const trim = (): void => {
    const slowest = Math.min(...[...live].map((b) => cursor[b]!));
    while (base < slowest && queue.length > 0) {
      queue.shift();
      queued -= sizes.shift() ?? 0;
      base++;
    }
    notify();
  };

  const take = async (branch: number): Promise<Read> => {
    const index = cursor[branch]!;
    // Ahead by the whole lead, with nothing queued for this reader: wait for the other to catch up.
    while (index - base >= queue.length && queued > maxLead && live.size > 1) await changed;
    if (index - base >= queue.length) {
      const read = reader.read();
      // Each reader awaits it; a reader that cancelled meanwhile must not leave a rejection unhandled.
      read.catch(() => {});
      queue.push(read);
      sizes.push(0);
      read.then(
        ({ value }) => {
          const at = queue.indexOf(read);
          if (at >= 0 && value !== undefined) {
            sizes[at] = value.byteLength;
            queued += value.byteLength;
          }
        },
        () => {},
      );
    }
    const result = await queue[index - base]!;
    cursor[branch] = index + 1;
    trim();
    return result;
  };

  const branch = (index: number): ReadableStream<Uint8Array> =>
    new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const { done, value } = await take(index);
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            controller.error(error);
          }
        },
        async cancel(reason) {
          live.delete(index);
          if (live.size === 0) return reader.cancel(reason);
          trim();
        },
      },
      { highWaterMark: 0 },
    );

  return [branch(0), branch(1)];
}
