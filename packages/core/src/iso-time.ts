// Timestamps in the exact shape of `Date.prototype.toISOString` (years 0000-9999), checked on their
// digits: `Date.parse` was most of the cost of validating an event's time and of stepping an
// `updatedAt` forward. Internal to core (not exported from the package).

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * For `YYYY-MM-DDTHH:MM:SS.sssZ` (already matched by ISO_TIME): true when every field is in its
 * calendar range, in which case Date.parse accepts it too; false means "ask Date.parse".
 */
export function canonicalInRange(time: string): boolean {
  if (time.charCodeAt(19) !== 0x2e || time.charCodeAt(23) !== 0x5a) return false; // '.', 'Z'
  const num = (at: number, width: number) => {
    let value = 0;
    for (let i = at; i < at + width; i++) value = value * 10 + (time.charCodeAt(i) - 0x30);
    return value;
  };
  const year = num(0, 4);
  const month = num(5, 2);
  const day = num(8, 2);
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]!) return false;
  if (month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return false;
  return num(11, 2) < 24 && num(14, 2) < 60 && num(17, 2) < 60;
}
