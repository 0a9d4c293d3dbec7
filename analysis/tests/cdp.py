#!/usr/bin/env python3
"""Minimal headless-Chromium driver over the Chrome DevTools Protocol.

Dependency-free (Python 3 standard library only).  Talks to Chromium through
``--remote-debugging-pipe``: Chromium reads NUL-terminated JSON messages on
fd 3 and writes NUL-terminated JSON messages on fd 4.

Usage:

    python3 cdp.py PAGE.html STEPS.json SCREENSHOT.png

* PAGE.html is opened as a file:// URL (absolute path).
* STEPS.json is a JSON array of strings; each is a JavaScript expression
  evaluated in order with Runtime.evaluate (returnByValue, awaitPromise).
  The value of each is collected; if an expression throws, its entry in
  "results" is ``{"exception": "<text>"}`` instead.
* A full-page PNG screenshot is written to SCREENSHOT.png.

Prints one JSON object on stdout:

    {"results": [...], "requests": [...], "exceptions": [...],
     "screenshot_bytes": N}

"requests" lists the URL of every Network.requestWillBeSent, in order,
including the page itself; "exceptions" holds the texts of
Runtime.exceptionThrown events and of console / log errors.

Exit status 0 on success; 1 on any failure (message on stderr).  Each
attempt is bounded by a 30 s deadline; a browser that dies by a signal is
started again, at most three times in all.  The browser (its whole process group) is
always killed and the temporary profile directory removed.

Environment: CHROMIUM overrides the browser executable (default: `chromium`
on PATH).
"""

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 30.0
CRASH_ATTEMPTS = 3


class CdpError(Exception):
    """Any failure; the message names what failed."""


class Browser:
    def __init__(self, exe, deadline):
        self.deadline = deadline
        self.profile = tempfile.mkdtemp(prefix="cdp-profile-")
        self.log_path = os.path.join(self.profile, "chromium-stderr.log")
        self.proc = None
        self.to_fd = None  # we write commands here (child's fd 3)
        self.from_fd = None  # we read responses here (child's fd 4)
        self.buf = b""
        self.next_id = 0
        self.pending_events = []  # events read while waiting for a response
        self.eof = False
        try:
            self._launch(exe)
        except BaseException:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise

    # ---- process management -------------------------------------------
    def _launch(self, exe):
        args = [
            exe,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-pipe",
            "--user-data-dir=" + self.profile,
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-sync",
            "--disable-component-update",
            "--window-size=1400,1000",
            # Extra robustness for root-in-a-container, no display:
            "--disable-dev-shm-usage",
            "--disable-breakpad",
            "--disable-crash-reporter",
            "--disable-default-apps",
            "--disable-features=Translate,MediaRouter,OptimizationHints",
            "--disable-background-timer-throttling",
            "--disable-backgrounding-occluded-windows",
            "--disable-renderer-backgrounding",
            "--hide-scrollbars",
            "--mute-audio",
            "--password-store=basic",
            "--use-mock-keychain",
            "--metrics-recording-only",
            "about:blank",
        ]
        def high(fd):
            # Move a pipe end to fd >= 10 (close-on-exec) so it can never
            # collide with the child's stdio or with fds 3/4.
            h = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            return h

        c_read, p_write = os.pipe()  # parent -> chromium (child fd 3)
        p_read, c_write = os.pipe()  # chromium -> parent (child fd 4)
        c_read, p_write = high(c_read), high(p_write)
        p_read, c_write = high(p_read), high(c_write)

        # Keep fds 0-4 occupied while spawning, so that subprocess's own
        # exec-error pipe lands on fd >= 5 and is not clobbered below.
        placeholders = []
        for fd in range(5):
            try:
                os.fstat(fd)
            except OSError:
                ph = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
                if ph != fd:  # lowest free fd is always chosen
                    os.close(ph)
                    continue
                placeholders.append(ph)

        def child_setup():
            # Place the child ends exactly on fds 3 and 4 (dup2 clears
            # close-on-exec on the copies).
            os.dup2(c_read, 3)
            os.dup2(c_write, 4)
            # Close any other *inheritable* fd (>= 5) we may have inherited;
            # close-on-exec ones (incl. subprocess's exec-error pipe) are
            # left alone, exec closes them.
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                if fd >= 5:
                    try:
                        if os.get_inheritable(fd):
                            os.close(fd)
                    except OSError:
                        pass

        env = dict(os.environ)
        env.setdefault("HOME", self.profile)
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                close_fds=False,  # child_setup keeps only 0-4 inheritable
                preexec_fn=child_setup,
                start_new_session=True,  # own process group, killed at end
                env=env,
            )
        except OSError as e:
            raise CdpError("launching chromium (%s) failed: %s" % (exe, e))
        finally:
            log.close()
            os.close(c_read)
            os.close(c_write)
            for ph in placeholders:
                os.close(ph)
        self.to_fd = p_write
        self.from_fd = p_read

    def stderr_tail(self, n=2000):
        """Last lines of chromium's stderr, minus the usual D-Bus noise."""
        try:
            with open(self.log_path, "rb") as f:
                data = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [l for l in data.splitlines() if "dbus" not in l.lower()]
        return "\n".join(lines)[-n:]

    def exit_code(self):
        try:
            return self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return None

    def close(self, polite=False):
        # Optionally a polite shutdown first; then make sure the whole
        # process group (browser, zygote, renderers, crashpad) is gone.
        if (polite and self.proc is not None and self.proc.poll() is None
                and not self.eof):
            try:
                self._write({"id": -1, "method": "Browser.close"})
                self.proc.wait(timeout=2)
            except Exception:
                pass
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for fd in (self.to_fd, self.from_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.to_fd = self.from_fd = None
        shutil.rmtree(self.profile, ignore_errors=True)

    # ---- wire protocol ----------------------------------------------------
    def _remaining(self):
        return self.deadline - time.monotonic()

    def _write(self, msg):
        data = json.dumps(msg).encode("utf-8") + b"\0"
        while data:
            if self._remaining() <= 0:
                raise CdpError("timed out writing to chromium's pipe")
            _, w, _ = select.select([], [self.to_fd], [], self._remaining())
            if not w:
                continue
            try:
                n = os.write(self.to_fd, data)
            except BrokenPipeError:
                raise CdpError("chromium closed its command pipe (exit code"
                               " %s)" % self.exit_code())
            data = data[n:]

    def _read_message(self, what):
        """Read one message; raise CdpError on EOF or deadline."""
        while True:
            i = self.buf.find(b"\0")
            if i >= 0:
                raw, self.buf = self.buf[:i], self.buf[i + 1:]
                try:
                    return json.loads(raw.decode("utf-8"))
                except ValueError as e:
                    raise CdpError("bad JSON from chromium: %s" % e)
            if self.eof:
                raise CdpError(
                    "chromium closed the DevTools pipe while waiting for %s"
                    " (exit code %s)" % (what, self.exit_code()))
            rem = self._remaining()
            if rem <= 0:
                raise CdpError("timed out (%.0f s) waiting for %s"
                               % (TIMEOUT_S, what))
            r, _, _ = select.select([self.from_fd], [], [], rem)
            if not r:
                continue
            chunk = os.read(self.from_fd, 1 << 20)
            if not chunk:
                self.eof = True
            self.buf += chunk

    def send(self, method, params=None, session=None):
        """Send a command and wait for its response; queue events meanwhile."""
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._write(msg)
        while True:
            m = self._read_message("the response to " + method)
            if m.get("id") == mid:
                if "error" in m:
                    raise CdpError("CDP command %s failed: %s"
                                   % (method, json.dumps(m["error"])))
                return m.get("result", {})
            if "method" in m:
                self.pending_events.append(m)

    def next_event(self, what):
        if self.pending_events:
            return self.pending_events.pop(0)
        while True:
            m = self._read_message(what)
            if "method" in m:
                return m


def remote_object_text(o):
    if "value" in o:
        v = o["value"]
        return v if isinstance(v, str) else json.dumps(v)
    return o.get("description") or o.get("unserializableValue") or o.get(
        "type", "")


def exception_text(d):
    """Text of a Runtime.ExceptionDetails."""
    text = d.get("text", "")
    exc = d.get("exception") or {}
    desc = exc.get("description") or (
        remote_object_text(exc) if exc else "")
    if desc and desc not in text:
        text = (text + " " + desc).strip() if text else desc
    url = d.get("url")
    if url and url not in text:
        text += " (%s:%s:%s)" % (url, d.get("lineNumber", 0) + 1,
                                 d.get("columnNumber", 0) + 1)
    return text


def run(page, steps_path, shot_path):
    deadline = time.monotonic() + TIMEOUT_S
    page_path = Path(page).resolve()
    if not page_path.is_file():
        raise CdpError("page not found: %s" % page)
    try:
        with open(steps_path, encoding="utf-8") as f:
            steps = json.load(f)
    except (OSError, ValueError) as e:
        raise CdpError("reading STEPS.json (%s) failed: %s" % (steps_path, e))
    if not isinstance(steps, list) or not all(isinstance(s, str)
                                              for s in steps):
        raise CdpError("STEPS.json must be a JSON array of strings")

    exe = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not exe:
        raise CdpError("chromium not found on PATH (set CHROMIUM=...)")

    # Chromium itself occasionally dies by a signal on a loaded machine (a
    # SIGSEGV before the first DevTools reply was seen once in CI).  That is the
    # browser's failure, not the page's: such a run is tried again, in a fresh
    # profile, and says so on stderr.  Any other failure is final.
    for attempt in range(1, CRASH_ATTEMPTS + 1):
        try:
            return _attempt(exe, deadline, page_path, steps, shot_path)
        except BrowserCrashed as e:
            if attempt == CRASH_ATTEMPTS:
                raise CdpError(str(e))
            sys.stderr.write("cdp.py: attempt %d: %s; trying again\n"
                             % (attempt, e.summary))
            deadline = time.monotonic() + TIMEOUT_S


class BrowserCrashed(CdpError):
    """Chromium died by a signal; `summary` names the signal."""

    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


def _attempt(exe, deadline, page_path, steps, shot_path):
    requests, exceptions = [], []
    b = Browser(exe, deadline)
    ok = False
    try:
        try:
            out = _drive(b, page_path, steps, shot_path, requests,
                         exceptions)
            ok = True
            return out
        except CdpError as e:
            tail = b.stderr_tail()
            message = str(e)
            if tail.strip():
                message = "%s\n--- chromium stderr (tail) ---\n%s" % (e, tail)
            code = b.proc.poll() if b.proc is not None else None
            if code is not None and code < 0:
                raise BrowserCrashed(message, "chromium died by signal %d"
                                     % -code)
            raise CdpError(message)
    finally:
        b.close(polite=ok)


def _drive(b, page_path, steps, shot_path, requests, exceptions):
    session = None

    def handle(ev):
        """Record interesting events of our page session."""
        if ev.get("sessionId") != session:
            return None
        m, p = ev["method"], ev.get("params", {})
        if m == "Network.requestWillBeSent":
            requests.append(p["request"]["url"])
        elif m == "Runtime.exceptionThrown":
            exceptions.append(exception_text(p.get("exceptionDetails", {})))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in (
                "error", "assert"):
            exceptions.append("console.%s: %s" % (p["type"], " ".join(
                remote_object_text(a) for a in p.get("args", []))))
        elif m == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error":
                t = "log[%s]: %s" % (e.get("source", "?"), e.get("text", ""))
                if e.get("url"):
                    t += " (%s)" % e["url"]
                exceptions.append(t)
        return m

    def drain():
        while b.pending_events:
            handle(b.pending_events.pop(0))

    # --- find (or make) the page target and attach -------------------------
    targets = b.send("Target.getTargets").get("targetInfos", [])
    page_t = next((t for t in targets if t.get("type") == "page"), None)
    if page_t is None:
        tid = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    else:
        tid = page_t["targetId"]
    session = b.send("Target.attachToTarget",
                     {"targetId": tid, "flatten": True})["sessionId"]
    for dom in ("Network", "Page", "Runtime", "Log"):
        b.send(dom + ".enable", session=session)
    drain()

    # --- navigate and wait for the load event -------------------------------
    url = page_path.as_uri()
    nav = b.send("Page.navigate", {"url": url}, session=session)
    if nav.get("errorText"):
        raise CdpError("navigation to %s failed: %s" % (url, nav["errorText"]))
    while True:
        ev = b.next_event("Page.loadEventFired for " + url)
        if handle(ev) != "Page.loadEventFired":
            continue
        # Guard against a stray load event of the initial about:blank.
        st = b.send("Runtime.evaluate", {
            "expression": "[document.readyState, location.href]",
            "returnByValue": True}, session=session)
        drain()
        state, href = st.get("result", {}).get("value", [None, None])
        if state == "complete" and href == url:
            break

    # --- run the steps -------------------------------------------------------
    results = []
    for i, expr in enumerate(steps):
        # "@viewport W": lay the page out as a phone W CSS pixels wide would.
        if expr.startswith("@viewport "):
            width = int(expr.split()[1])
            b.send("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": 800, "deviceScaleFactor": 1,
                "mobile": True}, session=session)
            drain()
            results.append(width)
            continue
        r = b.send("Runtime.evaluate", {
            "expression": expr,
            "returnByValue": True,
            "awaitPromise": True,
            "userGesture": True,
        }, session=session)
        drain()
        if "exceptionDetails" in r:
            results.append({"exception":
                            exception_text(r["exceptionDetails"])})
        else:
            results.append(r.get("result", {}).get("value"))

    # --- screenshot ------------------------------------------------------------
    shot = b.send("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True}, session=session)
    drain()
    png = base64.b64decode(shot["data"])
    try:
        with open(shot_path, "wb") as f:
            f.write(png)
    except OSError as e:
        raise CdpError("writing screenshot %s failed: %s" % (shot_path, e))

    return {"results": results, "requests": requests,
            "exceptions": exceptions, "screenshot_bytes": len(png)}


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: %s PAGE.html STEPS.json SCREENSHOT.png\n"
                         % argv[0])
        return 1
    try:
        out = run(argv[1], argv[2], argv[3])
    except CdpError as e:
        sys.stderr.write("cdp.py: %s\n" % e)
        return 1
    except Exception as e:  # unexpected: still a clear message, exit 1
        sys.stderr.write("cdp.py: unexpected failure: %s: %s\n"
                         % (type(e).__name__, e))
        return 1
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
