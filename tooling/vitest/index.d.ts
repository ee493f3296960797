import type { UserConfig } from 'vitest/config';
/** The shared vitest preset, merged with `overrides`. */
export function tidemarkVitest(overrides?: UserConfig): UserConfig;
