/** Text quoted back to a caller is cut, so a hostile link cannot make an error message huge. */
export const clip = (text: string, max = 60): string => (text.length > max ? `${text.slice(0, max)}…` : text);

/** Lower-case hex of bytes (digests in ETags and R2 metadata). */
export const hex = (bytes: ArrayBuffer | Uint8Array): string =>
  [...(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
