import { AwaInit1764400000000 } from './1764400000000-AwaInit.js';
import { AwaInstanceSettings1764500000003 } from './1764500000003-AwaInstanceSettings.js';

export { AwaInit1764400000000, AwaInstanceSettings1764500000003 };

/** The bundled migrations, in order. Add them to your DataSource `migrations`. */
export const AwaMigrations = [AwaInit1764400000000, AwaInstanceSettings1764500000003];
