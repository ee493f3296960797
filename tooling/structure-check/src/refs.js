// @ts-check
// References into the contract. Code and docs cite rules as `docs/contract.md §4`, `contract §4.2`
// or `SPEC §4`; each must name a numbered section that docs/contract.md has, so a reader who
// follows one lands on the rule it means. (Older comments cite the sections of a specification
// that is not in this repository; those are exactly what this check is for.)

/** A reference to a section, e.g. `contract §4.2`. A trailing full stop ends a sentence. */
const referencePattern = /\b(docs\/contract\.md|contract|SPEC)\s*§\s*(\d+(?:\.\d+)*)/g;
/** A numbered heading, e.g. `## 4. Operations` or `### 4.2 delete`. */
const headingPattern = /^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s+\S/;

/**
 * @typedef {object} SectionReference
 * @property {string} file
 * @property {number} line
 * @property {string} text as written, e.g. `SPEC §7.4`
 * @property {string} section e.g. `7.4`
 */

/**
 * The section numbers of a markdown document's numbered headings (`## 1. …`, `### 4.2 …`).
 * Headings inside fenced code blocks do not count.
 * @param {string} markdown
 * @returns {Set<string>}
 */
export function sectionsOf(markdown) {
  /** @type {Set<string>} */
  const sections = new Set();
  let fenced = false;
  for (const line of markdown.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const match = headingPattern.exec(line);
    if (match?.[1]) sections.add(match[1]);
  }
  return sections;
}

/**
 * Every section reference in a text.
 * @param {string} file path used in the report
 * @param {string} text
 * @returns {SectionReference[]}
 */
export function referencesIn(file, text) {
  /** @type {SectionReference[]} */
  const found = [];
  text.split(/\r?\n/).forEach((content, index) => {
    for (const match of content.matchAll(referencePattern)) {
      found.push({ file, line: index + 1, text: match[0], section: /** @type {string} */ (match[2]) });
    }
  });
  return found;
}

/**
 * The references that point at no section of the contract.
 * @param {SectionReference[]} references
 * @param {Set<string>} sections
 */
export function danglingReferences(references, sections) {
  return references.filter((ref) => !sections.has(ref.section));
}

/** @param {SectionReference} ref */
export function formatReference(ref) {
  return `${ref.file}:${ref.line} ${ref.text}: docs/contract.md has no section ${ref.section}`;
}
