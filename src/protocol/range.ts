/** What a request's Range header asks of a file of `size` bytes (RFC 9110, section 14). */
export type RangeAnswer =
  /** No range, one this server ignores (malformed, several, or an If-Range that no longer holds): 200 whole. */
  | { kind: "whole" }
  /** A range wholly past the end: 416 with `Content-Range: bytes *\/size`. */
  | { kind: "unsatisfiable" }
  | { kind: "part"; offset: number; length: number };

const SINGLE = /^bytes=(\d*)-(\d*)$/;

/**
 * One byte range, or the whole file. Several ranges would need a multipart answer; sending the whole
 * file instead is what RFC 9110 allows, and what downloaders that resume expect anyway.
 */
export function parseRange(header: string | null, size: number): RangeAnswer {
  if (header === null) return { kind: "whole" };
  const match = SINGLE.exec(header.replace(/\s+/g, ""));
  if (match === null) return { kind: "whole" };
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return { kind: "whole" };
  if (first === "") {
    // bytes=-n: the last n bytes.
    const suffix = Number(last);
    if (suffix === 0) return { kind: "unsatisfiable" };
    const length = Math.min(suffix, size);
    return length === 0 ? { kind: "unsatisfiable" } : { kind: "part", offset: size - length, length };
  }
  const offset = Number(first);
  if (last !== "" && Number(last) < offset) return { kind: "whole" };
  if (offset >= size) return { kind: "unsatisfiable" };
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  return { kind: "part", offset, length: end - offset + 1 };
}
