import { AwaInit1764400000000 } from './1764400000000-AwaInit.js';
import { AwaClaimIndexes1764500000002 } from './1764500000002-AwaClaimIndexes.js';

export { AwaInit1764400000000 };
export { AwaClaimIndexes1764500000002 };

/** The bundled migrations, in order. Add them to your DataSource `migrations`. */
export const AwaMigrations = [AwaInit1764400000000, AwaClaimIndexes1764500000002];
