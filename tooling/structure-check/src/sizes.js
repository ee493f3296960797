// @ts-check
// Size limits of the project's standards: a source file under 500 lines, a function under 80.
// Functions are found with the TypeScript parser, so every function-like node counts: declarations,
// methods, constructors, accessors, generators, and function expressions and arrow functions
// wherever they stand. A nested function is measured on its own, and also counts toward the
// lines of the function around it (which is as long as it reads).
import ts from 'typescript';

/** @typedef {{ maxFileLines: number; maxFunctionLines: number }} SizeLimits */
/**
 * @typedef {object} SizeViolation
 * @property {'file' | 'function'} kind
 * @property {string} file
 * @property {number} line 1-based line where the file or function starts
 * @property {string} name the function's name as a reader would look for it, or the file name
 * @property {number} lines
 * @property {number} limit
 */

/** @type {SizeLimits} */
export const defaultSizeLimits = { maxFileLines: 500, maxFunctionLines: 80 };

/**
 * Lines of a text as an editor numbers them: a final newline does not start another line.
 * @param {string} text
 */
export function countLines(text) {
  if (text.length === 0) return 0;
  const breaks = text.match(/\r\n|\r|\n/g)?.length ?? 0;
  return /(\r\n|\r|\n)$/.test(text) ? breaks : breaks + 1;
}

/**
 * @param {ts.PropertyName | ts.BindingName | ts.Expression} node
 * @param {ts.SourceFile} source
 * @returns {string | undefined}
 */
function nameText(node, source) {
  if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) return node.text;
  if (ts.isStringLiteral(node) || ts.isNumericLiteral(node)) return node.text;
  if (ts.isPropertyAccessExpression(node)) return node.getText(source);
  if (ts.isComputedPropertyName(node)) return `[${node.expression.getText(source)}]`;
  return undefined;
}

/**
 * The name of the class or object a member belongs to, for `Class.method`.
 * @param {ts.Node} member
 * @param {ts.SourceFile} source
 */
function ownerName(member, source) {
  const owner = member.parent;
  if (owner && (ts.isClassDeclaration(owner) || ts.isClassExpression(owner)) && owner.name) {
    return owner.name.text;
  }
  if (owner && ts.isObjectLiteralExpression(owner)) return describe(owner, source);
  return undefined;
}

/**
 * What a reader would call the function or object at `node`: its own name, the variable or
 * property it is assigned to, or the call it is passed to.
 * @param {ts.Node} node
 * @param {ts.SourceFile} source
 * @returns {string | undefined}
 */
function describe(node, source) {
  const parent = node.parent;
  if (!parent) return undefined;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyDeclaration(parent))
    return nameText(parent.name, source);
  if (ts.isPropertyAssignment(parent)) {
    const key = nameText(parent.name, source);
    const owner = ts.isObjectLiteralExpression(parent.parent) ? describe(parent.parent, source) : undefined;
    return owner && key ? `${owner}.${key}` : key;
  }
  if (ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
    return nameText(parent.left, source);
  }
  if (ts.isCallExpression(parent) || ts.isNewExpression(parent)) {
    return `${parent.expression.getText(source)}(…) callback`;
  }
  if (ts.isParenthesizedExpression(parent) || ts.isAsExpression(parent) || ts.isSatisfiesExpression(parent)) {
    return describe(parent, source);
  }
  if (ts.isReturnStatement(parent) || ts.isArrowFunction(parent)) {
    const outer = ts.findAncestor(parent, (n) => ts.isFunctionLike(n) && n !== node);
    const outerName = outer
      ? functionName(/** @type {ts.FunctionLikeDeclaration} */ (outer), source)
      : undefined;
    return outerName ? `returned by ${outerName}` : undefined;
  }
  return undefined;
}

/**
 * @param {ts.FunctionLikeDeclaration} node
 * @param {ts.SourceFile} source
 * @returns {string}
 */
export function functionName(node, source) {
  const generator = 'asteriskToken' in node && node.asteriskToken ? '*' : '';
  if (ts.isConstructorDeclaration(node)) return `${ownerName(node, source) ?? '<class>'}.constructor`;
  if (
    ts.isMethodDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  ) {
    const prefix = ts.isGetAccessorDeclaration(node)
      ? 'get '
      : ts.isSetAccessorDeclaration(node)
        ? 'set '
        : '';
    const owner = ownerName(node, source);
    const own = nameText(node.name, source) ?? '<member>';
    return `${prefix}${generator}${owner ? `${owner}.` : ''}${own}`;
  }
  if (node.name && (ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node))) {
    return generator + node.name.text;
  }
  return generator + (describe(node, source) ?? '<anonymous>');
}

/**
 * Every function-like node with a body in `source`, outermost first.
 * @param {ts.SourceFile} source
 * @returns {ts.FunctionLikeDeclaration[]}
 */
export function functionsOf(source) {
  /** @type {ts.FunctionLikeDeclaration[]} */
  const found = [];
  /** @param {ts.Node} node */
  const visit = (node) => {
    if (
      (ts.isFunctionDeclaration(node) ||
        ts.isFunctionExpression(node) ||
        ts.isArrowFunction(node) ||
        ts.isMethodDeclaration(node) ||
        ts.isConstructorDeclaration(node) ||
        ts.isGetAccessorDeclaration(node) ||
        ts.isSetAccessorDeclaration(node)) &&
      node.body
    ) {
      found.push(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The size violations of one source text.
 * @param {string} file path used in the report
 * @param {string} text
 * @param {SizeLimits} [limits]
 * @returns {SizeViolation[]}
 */
export function measureSource(file, text, limits = defaultSizeLimits) {
  /** @type {SizeViolation[]} */
  const violations = [];
  const fileLines = countLines(text);
  if (fileLines > limits.maxFileLines) {
    violations.push({
      kind: 'file',
      file,
      line: 1,
      name: file,
      lines: fileLines,
      limit: limits.maxFileLines,
    });
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  for (const fn of functionsOf(source)) {
    // From the first token (not the leading comment) to the closing brace, both lines counted.
    const first = source.getLineAndCharacterOfPosition(fn.getStart(source)).line;
    const last = source.getLineAndCharacterOfPosition(fn.getEnd()).line;
    const lines = last - first + 1;
    if (lines > limits.maxFunctionLines) {
      violations.push({
        kind: 'function',
        file,
        line: first + 1,
        name: functionName(fn, source),
        lines,
        limit: limits.maxFunctionLines,
      });
    }
  }
  return violations;
}

/**
 * One line per violation, as `file:line name: N lines (limit M)`.
 * @param {SizeViolation} v
 */
export function formatSizeViolation(v) {
  const what = v.kind === 'file' ? 'file' : `function ${v.name}`;
  return `${v.file}:${v.line} ${what}: ${v.lines} lines (limit ${v.limit})`;
}
