// Package depcheck holds only a test: it runs `go list` on the library's packages,
// in the library module alone (GOWORK=off), and fails when one of them depends on
// something a program importing it must never download or link: SQLite, YAML or
// Docker (examples and test helpers only), the AWS SDK outside the DynamoDB
// backends, or a backend or SDK under the backend-neutral packages.
package depcheck
