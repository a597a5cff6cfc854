type Read = ReadableStreamReadResult<Uint8Array>;

/**
 * Two readers of one stream that advance together: the source is read only once both have taken
 * the current chunk, so at most one chunk is held whoever is slower. (`ReadableStream.tee()` instead
 * buffers everything the faster reader is ahead by, which for a slow client and a fast cache is the
 * whole export.) A reader that cancels drops out; the other carries on alone.
 */
export function lockstepTee(source: ReadableStream<Uint8Array>): [ReadableStream<Uint8Array>, ReadableStream<Uint8Array>] {
  const reader = source.getReader();
  let chunk: Promise<Read> | undefined;
  const live = new Set<number>([0, 1]);
  const taken = new Set<number>();
  const position = [0, 0];
  let round = 0;
  let advance: () => void = () => {};
  let advanced = new Promise<void>((resolve) => (advance = resolve));

  const nextRound = (): void => {
    round++;
    chunk = undefined;
    taken.clear();
    const done = advance;
    advanced = new Promise<void>((resolve) => (advance = resolve));
    done();
  };

  const take = async (branch: number): Promise<Read> => {
    // Ahead of the other reader: wait until it has taken the chunk this one already has.
    while (position[branch]! > round) await advanced;
    if (chunk === undefined) {
      chunk = reader.read();
      // Each reader awaits it; a reader that cancelled meanwhile must not leave a rejection unhandled.
      chunk.catch(() => {});
    }
    const result = await chunk;
    taken.add(branch);
    position[branch]!++;
    if ([...live].every((b) => taken.has(b))) nextRound();
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
          if (chunk !== undefined && [...live].every((b) => taken.has(b))) nextRound();
        },
      },
      { highWaterMark: 0 },
    );

  return [branch(0), branch(1)];
}
