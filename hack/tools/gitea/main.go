// Command gitea is the upstream Gitea server, built from the
// code.gitea.io/gitea module so that the forge tests need no prebuilt
// binaries. It mirrors that module's own main package.
package main

import (
	"os"
	"runtime"
	"time"

	"code.gitea.io/gitea/cmd"
	"code.gitea.io/gitea/modules/log"
	"code.gitea.io/gitea/modules/setting"

	// Register the document renderers Gitea's main package registers.
	_ "code.gitea.io/gitea/modules/markup/markdown"

	"github.com/urfave/cli/v3"
)

// version is the code.gitea.io/gitea version go.mod requires; the API
// reports it, and the SDK checks it.
const version = "1.26.0"

func init() {
	setting.AppVer = version
	setting.AppBuiltWith = " built with " + runtime.Version()
	setting.AppStartTime = time.Now().UTC()
}

func main() {
	cli.OsExiter = func(code int) {
		log.GetManager().Close()
		os.Exit(code)
	}
	app := cmd.NewMainApp(cmd.AppVersion{Version: version})
	_ = cmd.RunMainApp(app, os.Args...)
	// Flush queued logs before exiting.
	log.GetManager().Close()
}
