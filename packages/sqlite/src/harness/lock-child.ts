// A process that holds a SQLite database locked (`BEGIN EXCLUSIVE`) until its stdin ends: the
// real fault `sqlite: locked by another process`. Run from the built `dist` with the path in argv[2].
import { writeSync } from 'node:fs';
import Database from 'better-sqlite3';

const path = process.argv[2];
if (path === undefined) throw new Error('usage: lock-child.js DATABASE');
const db = new Database(path);
db.exec('BEGIN EXCLUSIVE');
writeSync(1, 'locked\n');
process.stdin.resume();
process.stdin.on('end', () => {
  db.exec('ROLLBACK');
  db.close();
});
