import { runStoreContract } from '../src/index.js';
import { memoryDriver } from './fixtures/memory-driver.js';

// The reference backend must pass its own contract, model-based test included.
runStoreContract(memoryDriver());
