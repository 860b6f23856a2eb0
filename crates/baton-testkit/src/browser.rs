//! A real headless Chromium for tests that look at a page the way a person's
//! browser does: open it, ask the DOM questions, change the viewport, take a
//! screenshot.
//!
//! [`Browser::launch`] starts Debian's `chromium` headless in its own process
//! group with a throwaway profile, reads the DevTools port Chromium picked
//! from `<profile>/DevToolsActivePort`, and speaks the Chrome DevTools
//! Protocol to one page over a synchronous websocket. Dropping the
//! [`Browser`] kills the whole group and reaps it: no Chromium outlives its
//! test.
//!
//! A test that needs a browser fails when Chromium is missing, naming the
//! package to install; it never skips silently. Every wait is bounded by
//! [`PATIENCE`], and every failure panics with what was being done, since
//! this is test support and the panic is the test's verdict.

use std::fs::File;
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use base64::Engine as _;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use crate::{PATIENCE, pause};

/// The Debian package that provides the browser, for the failure message.
pub const CHROMIUM_PACKAGE: &str = "chromium";

/// The names the browser's executable goes by, searched in `PATH` in order.
const EXECUTABLES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

/// A headless Chromium with one page open, driven over DevTools.
///
/// Dropping it kills Chromium and every process it started, and removes its
/// profile directory.
pub struct Browser {
    socket: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Events read while waiting for a reply, oldest first.
    events: Vec<Value>,
    /// Dropped after the socket: kills Chromium before its profile goes.
    _chromium: Group,
    profile: tempfile::TempDir,
}

/// Chromium's process group. Dropping it kills the group and reaps the
/// leader, so a launch that fails halfway leaves no browser behind.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.0);
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where Chromium's executable is, searching `PATH`.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    EXECUTABLES.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

impl Browser {
    /// Starts headless Chromium and opens a blank page.
    ///
    /// # Panics
    ///
    /// When Chromium is not installed (the message names the Debian package
    /// to install), when it does not start or publish its DevTools port
    /// within [`PATIENCE`], or when DevTools refuses to open a page.
    pub fn launch() -> Self {
        let Some(exe) = find_chromium() else {
            panic!(
                "this test needs a headless browser, and none of {EXECUTABLES:?} is in PATH: \
                 install Debian's `{CHROMIUM_PACKAGE}` package \
                 (apt-get install -y {CHROMIUM_PACKAGE})"
            );
        };
        let profile = tempfile::Builder::new()
            .prefix("baton-chromium-")
            .tempdir()
            .expect("create a profile directory for chromium");
        let log = profile.path().join("chromium.log");
        let stderr = File::create(&log).expect("create chromium's log file");
        let mut chromium = Group(
            Command::new(&exe)
                .args([
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--no-default-browser-check",
                    "--hide-scrollbars",
                    "--remote-debugging-port=0",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg("about:blank")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("failed to start {}: {e}", exe.display())),
        );
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + PATIENCE;
        let (port, path) = loop {
            if let Some(found) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|text| parse_active_port(&text))
            {
                break found;
            }
            if let Ok(Some(status)) = chromium.0.try_wait() {
                panic!(
                    "{} exited ({status}) before opening DevTools; its log:\n{}",
                    exe.display(),
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {} to write {}; its log:\n{}",
                    exe.display(),
                    port_file.display(),
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            pause(20);
        };
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("failed to connect to DevTools on port {port}: {e}"));
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("set DevTools' read timeout");
        let url = format!("ws://127.0.0.1:{port}{path}");
        let (socket, _) = tungstenite::client(url.as_str(), stream)
            .unwrap_or_else(|e| panic!("failed to open the DevTools websocket {url}: {e}"));
        let mut browser = Self {
            socket,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            _chromium: chromium,
            profile,
        };
        let target = browser.browser_call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].clone();
        let attached = browser.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("Target.attachToTarget gave no session: {attached}"))
            .to_owned();
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        browser
    }

    /// Opens `url` (`file://…` works) and returns once its load event fired.
    ///
    /// # Panics
    ///
    /// When the navigation fails or the page does not load in time.
    pub fn open(&mut self, url: &str) {
        self.events.clear();
        let nav = self.call("Page.navigate", json!({"url": url}));
        if let Some(e) = nav.get("errorText") {
            panic!("failed to open {url}: {e}");
        }
        self.wait_event("Page.loadEventFired");
    }

    /// Evaluates `js` in the page and returns its value (a promise is
    /// awaited; DOM nodes are not values: return what you need from them).
    ///
    /// # Panics
    ///
    /// When the script throws.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{js} threw: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Makes the page's viewport `width`×`height` CSS pixels, as a phone's
    /// (honouring `<meta name="viewport">`) when `mobile`.
    pub fn set_viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": width,
                "height": height,
                "deviceScaleFactor": 1,
                "mobile": mobile,
            }),
        );
    }

    /// Writes a PNG of the whole page (beyond the viewport's height too) at
    /// the viewport's width to `path`, creating its directory.
    ///
    /// # Panics
    ///
    /// When DevTools gives no image or the file cannot be written.
    pub fn screenshot(&mut self, path: &Path) {
        let metrics = self.call("Page.getLayoutMetrics", json!({}));
        let viewport = &metrics["cssLayoutViewport"];
        let content = &metrics["cssContentSize"];
        let width = viewport["clientWidth"].as_f64().unwrap_or(800.0);
        let height = content["height"].as_f64().unwrap_or(600.0);
        let shot = self.call(
            "Page.captureScreenshot",
            json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            }),
        );
        let data = shot["data"]
            .as_str()
            .unwrap_or_else(|| panic!("Page.captureScreenshot gave no data"));
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("decode the screenshot's base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .unwrap_or_else(|e| panic!("failed to create {}: {e}", dir.display()));
        }
        std::fs::write(path, png)
            .unwrap_or_else(|e| panic!("failed to write {}: {e}", path.display()));
    }

    /// Clicks at (`x`, `y`), CSS pixels from the viewport's top left, as a
    /// person's pointer does: pressed and released there, so whatever is
    /// under it (a link inside an SVG picture too) gets a real click.
    pub fn click(&mut self, x: f64, y: f64) {
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// [`Browser::click`], then waits for the page the click opens to load.
    ///
    /// # Panics
    ///
    /// When no page loads in time.
    pub fn click_to_load(&mut self, x: f64, y: f64) {
        self.events.clear();
        self.click(x, y);
        self.wait_event("Page.loadEventFired");
    }

    /// Chromium's profile directory (its log is `chromium.log` there).
    pub fn profile(&self) -> &Path {
        self.profile.path()
    }

    /// Sends `method` to the page and returns its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    /// Sends `method` to the browser itself and returns its result.
    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.socket
            .send(Message::text(msg.to_string()))
            .unwrap_or_else(|e| panic!("failed to send {method} to DevTools: {e}"));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let m = self.next_message(method, deadline);
            if m["id"].as_u64() == Some(id) {
                if let Some(e) = m.get("error") {
                    panic!("DevTools refused {method}: {e}");
                }
                return m["result"].clone();
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    /// Waits for the page's event `name`, taking it from those already read
    /// first.
    fn wait_event(&mut self, name: &str) -> Value {
        let mine = |e: &Value, session: &str| e["method"] == name && e["sessionId"] == session;
        if let Some(i) = self.events.iter().position(|e| mine(e, &self.session)) {
            return self.events.remove(i);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let m = self.next_message(name, deadline);
            if mine(&m, &self.session) {
                return m;
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    fn next_message(&mut self, waiting_for: &str, deadline: Instant) -> Value {
        loop {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for DevTools' {waiting_for}"
            );
            let msg = self
                .socket
                .read()
                .unwrap_or_else(|e| panic!("failed to read DevTools' {waiting_for}: {e}"));
            if let Message::Text(text) = msg {
                return serde_json::from_str(text.as_str()).unwrap_or_else(|e| {
                    panic!("DevTools sent something that is not JSON ({e}): {text}")
                });
            }
        }
    }
}

/// The port and websocket path in `DevToolsActivePort`'s text, once both
/// lines are written.
fn parse_active_port(text: &str) -> Option<(u16, String)> {
    let mut lines = text.lines();
    let port = lines.next()?.trim().parse().ok()?;
    let path = lines.next()?.trim();
    path.starts_with('/').then(|| (port, path.to_owned()))
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Courtesy only: the group is killed next whatever Chromium answers.
        let _ = self.socket.close(None);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_active_port;

    #[test]
    fn the_active_port_file_needs_both_lines() {
        assert_eq!(parse_active_port(""), None);
        assert_eq!(parse_active_port("9222\n"), None);
        assert_eq!(
            parse_active_port("9222\n/devtools/browser/abc\n"),
            Some((9222, "/devtools/browser/abc".into()))
        );
    }
}
