// LangGraph's checkpoint validation suite on the jsonl backend.
import { jsonl } from './backends.js';
import { validateOn } from './validation.js';

validateOn(jsonl);
