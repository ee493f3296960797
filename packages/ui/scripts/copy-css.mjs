// Copies the stylesheet next to the compiled front end, where the server reads both at start.
import { copyFileSync, mkdirSync } from 'node:fs';

const dist = new URL('../dist/web/', import.meta.url);
mkdirSync(dist, { recursive: true });
copyFileSync(new URL('../web/app.css', import.meta.url), new URL('app.css', dist));
