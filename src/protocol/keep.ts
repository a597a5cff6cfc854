/**
 * Where a sink hands the answer it made, for whatever cache its route's policy chose for this request
 * (src/routes/cache-policy.ts): the sink says what it has, the policy decides what is kept and what
 * the client is told. A route that keeps nothing gets a keeper that keeps nothing.
 */
export interface Keep {
  /** Whether a cache may keep this answer at all (the request log says MISS, or OFF). */
  readonly stores: boolean;
  /** The answer reports an upstream failure (a 200 listing an alias that failed): no cache keeps it. */
  failed(): void;
  /**
   * A whole answer, its ETag set: kept as it is. Settles once stored (the worker waits for it either
   * way); a small answer may wait, so that the next request finds it.
   */
  whole(bytes: Uint8Array<ArrayBuffer>, headers: Headers): Promise<void>;
  /**
   * A streamed answer of about `estimate` bytes: the stream to send instead (`shared`: the cache reads
   * its chunks too, so none may be freed once written), kept only once it ended whole and
   * `outcome.error` stayed unset. `clientBranch` guards the client's branch of a kept stream: the
   * cache's reader keeps the source going while a slow client lags behind it.
   */
  streamed(
    stream: ReadableStream<Uint8Array>,
    estimate: number,
    headers: Headers,
    outcome: { readonly error?: unknown },
    clientBranch?: (branch: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array>,
  ): { stream: ReadableStream<Uint8Array>; shared: boolean };
}
