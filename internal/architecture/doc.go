// Package architecture holds no code: its tests hold the project's rules
// of structure that ARCHITECTURE.md states (who may import whom, how long
// a function may grow), so that a change that breaks one fails.
package architecture
