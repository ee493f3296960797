import { describe, expect, it } from 'vitest';
import { danglingReferences, referencesIn, sectionsOf } from '../src/refs.js';

const contract = [
  '# The contract',
  '## 1. Words',
  '## 4. Operations',
  '### 4.2 delete',
  '```md',
  '## 9. not a heading, inside a fence',
  '```',
  '## Appendix without a number',
].join('\n');

describe('contract section references', () => {
  it('reads the numbers of numbered headings only, outside code fences', () => {
    expect([...sectionsOf(contract)]).toEqual(['1', '4', '4.2']);
  });

  it('finds each form of reference with its line, and a full stop after it is not part of it', () => {
    const text = [
      '// See docs/contract.md §4.2 for the guard.',
      ' * append is atomic (SPEC §4). Values: contract §1.',
      'no reference here: § alone, or section 4',
    ].join('\n');
    expect(referencesIn('a.ts', text).map((r) => [r.line, r.text, r.section])).toEqual([
      [1, 'docs/contract.md §4.2', '4.2'],
      [2, 'SPEC §4', '4'],
      [2, 'contract §1', '1'],
    ]);
  });

  it('flags references to sections the contract does not have', () => {
    const refs = referencesIn('b.md', 'SPEC §7.4 and contract §4.2 and contract §4.3 and SPEC §4');
    expect(danglingReferences(refs, sectionsOf(contract)).map((r) => r.text)).toEqual([
      'SPEC §7.4',
      'contract §4.3',
    ]);
  });
});
