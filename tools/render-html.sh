#!/usr/bin/env bash
# Render a schedsim HTML report in headless Chromium to a PNG, failing on console errors or
# network requests (the report must be self-contained).
#   tools/render-html.sh REPORT.html OUT.png [HEIGHT]
# Needs Debian's `chromium` (apt-get install -y chromium).
set -euo pipefail
html="$(realpath "$1")"; png="$2"; height="${3:-8000}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
[ -n "$browser" ] || { echo "render-html: chromium is not installed (apt-get install -y chromium)" >&2; exit 2; }
log="$(mktemp)"; trap 'rm -f "$log"' EXIT
# No network: any request other than the file itself fails and shows up in the log.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-dev-shm-usage --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND" \
    --enable-logging=stderr --v=0 --window-size=1200,"$height" \
    --screenshot="$png" "file://$html" 2>"$log" || { cat "$log" >&2; exit 1; }
if grep -E "CONSOLE|Uncaught|ERR_|Failed to load" "$log" | grep -v -E "dbus|gpu|GPU|Fontconfig" >&2; then
    echo "render-html: the page logged errors (above)" >&2
    exit 1
fi
[ -s "$png" ] || { echo "render-html: no PNG written" >&2; exit 1; }
echo "render-html: $png"
