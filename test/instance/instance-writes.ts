import { queryOnce } from '../support/test-database.js';

/**
 * Makes writes to awa.instances fail: the next `times` of them, or all of them (null). A sequence counts them, since a
 * failed write rolls back.
 */
export async function breakInstanceWrites(url: string, times: number | null): Promise<void> {
  await queryOnce(
    url,
    `
    DROP SEQUENCE IF EXISTS test_instance_writes; CREATE SEQUENCE test_instance_writes;
    CREATE OR REPLACE FUNCTION test_fail_instance_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF ${times ?? 'NULL'}::int IS NULL OR nextval('test_instance_writes') <= ${times ?? 0} THEN
        RAISE EXCEPTION 'test: instance writes are broken';
      END IF;
      RETURN NEW;
    END $$;
    DROP TRIGGER IF EXISTS test_fail_instance_write ON awa.instances;
    CREATE TRIGGER test_fail_instance_write BEFORE INSERT OR UPDATE ON awa.instances
      FOR EACH ROW EXECUTE FUNCTION test_fail_instance_write();`,
  );
}
export const repairInstanceWrites = (url: string) =>
  queryOnce(url, 'DROP TRIGGER IF EXISTS test_fail_instance_write ON awa.instances');
