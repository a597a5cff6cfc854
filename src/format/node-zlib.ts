// The two functions of the runtime's `node:zlib` (workerd's native zlib, under the nodejs_compat flag)
// that deflate.ts calls, typed here: the worker is not typed against all of Node.
declare module "node:zlib" {
  export function deflateRawSync(data: Uint8Array, options: { level: number; finishFlush: number }): Uint8Array;
  export function crc32(data: Uint8Array, value?: number): number;
}
