import { badRequest } from "../errors.ts";

/** A download name: no path, quotes, control or bidi characters, and the format's extension. */
export function downloadName(requested: string | undefined, fallback: string, extension: string): string {
  if (requested === undefined) return `${fallback}.${extension}`;
  // Cut by code points: cutting a surrogate pair in half leaves text no header can carry.
  // Format and other control characters (bidi overrides such as U+202E, which would make the name a
  // user sees differ from the file's, zero-width characters, C1 controls) are dropped.
  const cleaned = Array.from(
    requested
      .replace(/[\u0000-\u001f\u007f"\\/:*?<>|]+/g, "_")
      .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "")
      .trim(),
  )
    .slice(0, 120)
    .join("");
  if (cleaned === "" || /^\.+$/.test(cleaned))
    throw badRequest("filename", "Parameter filename is empty once unsafe characters are removed.");
  return cleaned.toLowerCase().endsWith(`.${extension}`) ? cleaned : `${cleaned}.${extension}`;
}

/** `attachment` with an ASCII fallback name and the exact UTF-8 name (RFC 6266 / RFC 8187). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}
