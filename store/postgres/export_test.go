package postgres

// Migrations is migrations, for the tests of package postgres_test.
var Migrations = migrations
