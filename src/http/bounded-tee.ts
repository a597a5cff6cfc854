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
  const tee = new BoundedTee(source.getReader(), maxLead);
  return [tee.branch(0), tee.branch(1)];
}

class BoundedTee {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #maxLead: number;
  /** Chunks read from the source and not yet taken by every live reader; `#base` is the first one's index. */
  readonly #queue: Promise<Read>[] = [];
  readonly #sizes: number[] = [];
  #base = 0;
  #queued = 0;
  readonly #cursor = [0, 0];
  readonly #live = new Set<number>([0, 1]);
  #wake: () => void = () => {};
  #changed = new Promise<void>((resolve) => (this.#wake = resolve));

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>, maxLead: number) {
    this.#reader = reader;
    this.#maxLead = maxLead;
  }

  branch(index: number): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            const { done, value } = await this.#take(index);
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            controller.error(error);
          }
        },
        cancel: async (reason) => {
          this.#live.delete(index);
          if (this.#live.size === 0) return this.#reader.cancel(reason);
          this.#trim();
        },
      },
      { highWaterMark: 0 },
    );
  }

  #notify(): void {
    const resolve = this.#wake;
    this.#changed = new Promise<void>((r) => (this.#wake = r));
    resolve();
  }

  /** Drops chunks every live reader has passed. */
  #trim(): void {
    const slowest = Math.min(...[...this.#live].map((b) => this.#cursor[b]!));
    while (this.#base < slowest && this.#queue.length > 0) {
      this.#queue.shift();
      this.#queued -= this.#sizes.shift() ?? 0;
      this.#base++;
    }
    this.#notify();
  }

  async #take(branch: number): Promise<Read> {
    const index = this.#cursor[branch]!;
    // Ahead by the whole lead, with nothing queued for this reader: wait for the other to catch up.
    while (index - this.#base >= this.#queue.length && this.#queued > this.#maxLead && this.#live.size > 1)
      await this.#changed;
    if (index - this.#base >= this.#queue.length) this.#readAhead();
    const result = await this.#queue[index - this.#base]!;
    this.#cursor[branch] = index + 1;
    this.#trim();
    return result;
  }

  /** The source's next chunk, queued for both readers; its size counts towards the lead once it is read. */
  #readAhead(): void {
    const read = this.#reader.read();
    // Each reader awaits it; a reader that cancelled meanwhile must not leave a rejection unhandled.
    read.catch(() => {});
    this.#queue.push(read);
    this.#sizes.push(0);
    read.then(
      ({ value }) => {
        const at = this.#queue.indexOf(read);
        if (at >= 0 && value !== undefined) {
          this.#sizes[at] = value.byteLength;
          this.#queued += value.byteLength;
        }
      },
      () => {},
    );
  }
}
