import { AwaInit1764400000000 } from './1764400000000-AwaInit.js';

export { AwaInit1764400000000 };

/** The bundled migrations, in order. Add them to your DataSource `migrations`. */
export const AwaMigrations = [AwaInit1764400000000];
