// LangGraph's checkpoint validation suite on the memory backend.
import { memory } from './backends.js';
import { validateOn } from './validation.js';

validateOn(memory);
