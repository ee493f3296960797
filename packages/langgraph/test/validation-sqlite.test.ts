// LangGraph's checkpoint validation suite on the sqlite backend.
import { sqlite } from './backends.js';
import { validateOn } from './validation.js';

validateOn(sqlite);
