-- Reserved for another branch's migration 0007 (renumbered when the branches merge).
SELECT 1;
