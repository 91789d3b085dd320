// Package config holds every setting of a run: the keys with their
// defaults and help, the flag, RECOMMEND_* environment variable and YAML
// file each is read from, and the validation, whose errors name the key
// and never quote a credential. A loaded Config hands each package a run
// wires its typed options; viper goes no further than this package.
package config
