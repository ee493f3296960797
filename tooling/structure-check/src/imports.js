// @ts-check
// Import layering and cycles, as dependency-cruiser sees them with the rules in
// .dependency-cruiser.cjs. The cycle rule and the layering rules are reported (and can be made
// strict) apart, because they are fixed by different people at different times.

/**
 * @typedef {object} CruiseViolation
 * @property {string} from
 * @property {string} to
 * @property {{ name: string }[]} [cycle] for a cycle, the modules around it (ending where it starts)
 * @property {{ name: string }} rule
 */

/** The name of the rule in .dependency-cruiser.cjs that forbids cycles. */
export const cycleRule = 'no-circular';

/**
 * Splits dependency-cruiser's violations into cycles and layering violations. A cycle is reported
 * once however many of its edges dependency-cruiser lists.
 * @param {CruiseViolation[]} violations
 */
export function classifyViolations(violations) {
  /** @type {Map<string, string[]>} */
  const cycles = new Map();
  /** @type {CruiseViolation[]} */
  const layering = [];
  for (const v of violations) {
    if (v.rule.name !== cycleRule) {
      layering.push(v);
      continue;
    }
    const members = [v.from, ...(v.cycle?.map((c) => c.name) ?? [v.to])];
    const key = [...new Set(members)].sort().join(' ');
    if (!cycles.has(key)) cycles.set(key, members);
  }
  return { cycles: [...cycles.values()], layering };
}

/** @param {CruiseViolation} v */
export function formatLayering(v) {
  return `${v.from} → ${v.to} (${v.rule.name})`;
}

/** @param {string[]} cycle */
export function formatCycle(cycle) {
  return cycle.join(' → ');
}
