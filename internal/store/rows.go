package store

import (
	"database/sql"
	"fmt"
)

// scanAll reads every row of rows with scan, in order, and closes rows.
// An error, from scan or from the rows, is wrapped with what: the read's
// name, as its query's own error is.
func scanAll[T any](rows *sql.Rows, what string, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// scanString scans a row of one text column.
func scanString(sc scanner) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}
