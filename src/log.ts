/** One JSON object per line, so Workers Logs can filter on any field. */
export function log(fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ time: new Date().toISOString(), ...fields }));
}
