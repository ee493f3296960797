#!/usr/bin/env node
// The `tidemark` executable.
import { toIoError } from '@tidemark/core';
import { main } from './cli.js';
import { EXIT_CODES, oneLine } from './exit-codes.js';
import { isReaderGone, StdoutClosedError } from './terminal.js';

// A failed write to stdout (a full disk) is an IO failure of the command: one line on stderr and
// the IO exit status, never an unhandled 'error' event with a stack, never success. A reader that
// closed the pipe (`| head -1`: EPIPE, or ECONNRESET on a socket) took what it wanted: the
// command stops quietly.
let stdoutError: unknown;
let reported = false;
process.stdout.on('error', (error) => {
  stdoutError ??= error;
});
const stdoutClosed = () => isReaderGone(stdoutError);
const stdoutFailure = () => toIoError(stdoutError, 'writing to stdout');

let status = await main(process.argv.slice(2), {
  stdout: {
    get isTTY() {
      return process.stdout.isTTY;
    },
    write(text: string) {
      if (stdoutError !== undefined) {
        reported = true;
        throw stdoutClosed() ? new StdoutClosedError() : stdoutFailure();
      }
      return process.stdout.write(text);
    },
  },
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
// The error of the last write arrives as an event after it returned, or once the output queued
// for a slow reader has been flushed.
await new Promise((resolve) => setImmediate(resolve));
if (stdoutError === undefined && process.stdout.writableLength > 0) {
  await new Promise((resolve) => {
    process.stdout.once('drain', resolve);
    process.stdout.once('error', resolve);
    process.stdout.once('close', resolve);
  });
}
if (stdoutError !== undefined && !reported && !stdoutClosed()) {
  process.stderr.write(`tidemark: IO: ${oneLine(stdoutFailure().message)}\n`);
  status = EXIT_CODES.IO;
}
process.exitCode = status;
