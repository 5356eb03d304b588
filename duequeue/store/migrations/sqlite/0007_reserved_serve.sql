-- A placeholder for version 7, the number HELPERS.md reserves for another branch (serve): the
-- runner wants every step from the oldest version to the newest. Replaced or renumbered at merge.
SELECT 1;
