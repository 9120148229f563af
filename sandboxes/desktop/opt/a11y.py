"""The accessibility tree of the desktop's apps (AT-SPI over D-Bus), read by the user's daemon (``desktopd.py
user``: ``a11y`` and ``element_action``). The tree is read level by level with each level's D-Bus calls
pipelined; ids are child-index paths (app index, then index in parent), the app holding the active window
first. Needs GObject introspection's AT-SPI (``python3-gi``, ``gir1.2-atspi-2.0``) and python3-xlib.
"""

from __future__ import annotations

import re
import time


class ElementError(ValueError):
    """The caller's bad element request: an id of the wrong form, an element gone, an action it does not take."""


class Accessibility:
    def __init__(self, display: str, max_type: int) -> None:
        self.display, self.max_type = display, max_type
        self._desktop = None

    def desktop(self):  # noqa: ANN201
        if self._desktop is None:
            import gi

            gi.require_version("Atspi", "2.0")
            from gi.repository import Atspi

            self.atspi = Atspi
            self._desktop = Atspi.get_desktop(0)
        return self._desktop

    def bus(self):  # noqa: ANN201
        """The accessibility bus (its address asked of the session bus once)."""
        if getattr(self, "_bus", None) is None:
            from gi.repository import Gio, GLib

            session = Gio.bus_get_sync(Gio.BusType.SESSION, None)
            address = session.call_sync("org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress", None,
                                        GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, 5000, None).unpack()[0]
            self._bus = Gio.DBusConnection.new_for_address_sync(
                address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
                None, None)
        return self._bus

    def _calls(self, calls: list[tuple], timeout_ms: int = 20000) -> list:
        """Send every (bus name, path, interface, method, args) at once and wait for all replies (pipelined:
        an app answers them in one go instead of one round trip each); a failed call gives None. The timeout is
        long: at load 36 a batch took over 5 s, the old limit, and a reset's tree came back empty."""
        from gi.repository import Gio, GLib

        bus, context = self.bus(), GLib.MainContext.default()
        results: list = [None] * len(calls)
        pending = [len(calls)]

        def done(conn, res, i):  # noqa: ANN001
            try:
                results[i] = conn.call_finish(res).unpack()
            except GLib.Error:
                results[i] = None
            pending[0] -= 1

        for i, (name, path, iface, method, args) in enumerate(calls):
            bus.call(name, path, iface, method, args, None, Gio.DBusCallFlags.NO_AUTO_START, timeout_ms, None,
                     done, i)
        deadline = time.monotonic() + timeout_ms / 1000 + 1
        while pending[0] and time.monotonic() < deadline:
            context.iteration(True)
        return results

    def tree(self, req: dict) -> dict:
        """The showing nodes of every app, read level by level with each level's D-Bus calls pipelined (a few
        round trips per level instead of several per node). Ids are child-index paths (app index, then index in
        parent); the app holding the active window comes first; output is depth first."""
        from gi.repository import GLib

        self.desktop()
        at = self.atspi
        max_nodes = int(req.get("max_nodes", 400))
        st = at.StateType
        interesting = [(int(state), label) for state, label in (
            (st.FOCUSED, "focused"), (st.SELECTED, "selected"), (st.CHECKED, "checked"), (st.EXPANDED, "expanded"),
            (st.EDITABLE, "editable"), (st.ACTIVE, "active"))]
        showing, managing, editable = int(st.SHOWING), int(st.MANAGES_DESCENDANTS), int(st.EDITABLE)
        acc = "org.a11y.atspi.Accessible"
        root = "/org/a11y/atspi/accessible/root"

        def has(states: list[int], bit: int) -> bool:
            return len(states) > bit // 32 and bool(states[bit // 32] & (1 << (bit % 32)))

        apps = self._calls([("org.a11y.atspi.Registry", root, acc, "GetChildren", None)])[0]
        apps = list(apps[0]) if apps else []
        pids = self._calls([("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                             "GetConnectionUnixProcessID", GLib.Variant("(s)", (name,))) for name, _ in apps])
        focused = self.active_pid()
        order = sorted(range(len(apps)), key=lambda i: 0 if focused and pids[i] and pids[i][0] == focused else 1)
        nodes: dict[str, dict] = {}  # ident -> element (+ private keys)
        kids: dict[str, list[str]] = {}
        level = [(apps[i][0], apps[i][1], str(i), 0) for i in order]
        kept = 0
        while level and kept < max_nodes:
            # states first, then the rest only of the nodes shown: most children of a showing node are not
            # (a menu bar's closed menus hold hundreds of items), and each call costs the app's main loop
            states_of = self._calls([(name, path, acc, "GetState", None) for name, path, _, _ in level])
            level = [(node, list(states[0])) for node, states in zip(level, states_of)
                     if states is not None and (node[3] == 0 or has(list(states[0]), showing))]
            calls = []
            for (name, path, _, _), _ in level:
                calls += [(name, path, "org.freedesktop.DBus.Properties", "GetAll", GLib.Variant("(s)", (acc,))),
                          (name, path, acc, "GetRole", None)]
            answers = self._calls(calls)
            parents = []
            for k, ((name, path, ident, depth), states) in enumerate(level):
                props, role = answers[2 * k: 2 * k + 2]
                if props is None or role is None:
                    continue
                props, role = props[0], role[0]
                if kept >= max_nodes:
                    break
                kept += 1
                nodes[ident] = {"id": ident, "role": at.role_get_name(at.Role(role)) if role < int(at.Role.LAST_DEFINED)
                                else str(role), "name": props.get("Name") or "",
                                "states": [lbl for bit, lbl in interesting if has(states, bit)], "bbox": None,
                                "depth": depth, "text": None, "_ref": (name, path),
                                "_text": role in self.text_roles() or has(states, editable)}
                count = int(props.get("ChildCount") or 0)
                if count and not (has(states, managing) and count > 200):
                    parents.append((name, path, ident, depth))
            children = self._calls([(name, path, acc, "GetChildren", None) for name, path, _, _ in parents])
            level = []
            for (_, _, ident, depth), refs in zip(parents, children):
                refs = list(refs[0])[:200] if refs else []
                kids[ident] = [f"{ident}.{i}" for i in range(len(refs))]
                level += [(bus, path, f"{ident}.{i}", depth + 1) for i, (bus, path) in enumerate(refs)]
        ordered: list[dict] = []

        def dfs(ident: str) -> None:
            if ident in nodes:
                ordered.append(nodes[ident])
                for child in kids.get(ident, []):
                    dfs(child)

        for i in order:
            dfs(str(i))
        calls, slots = [], []
        for k, element in enumerate(ordered):
            name, path = element.pop("_ref")
            calls.append((name, path, "org.a11y.atspi.Component", "GetExtents", GLib.Variant("(u)", (0,))))
            slots.append((k, "bbox"))
            if element.pop("_text"):
                calls.append((name, path, "org.a11y.atspi.Text", "GetText", GLib.Variant("(ii)", (0, 200))))
                slots.append((k, "text"))
        for (k, key), result in zip(slots, self._calls(calls)):
            if result is not None:
                ordered[k][key] = list(result[0]) if key == "bbox" else result[0]
        return {"elements": ordered}

    def active_pid(self) -> int | None:
        """The pid of the application whose window has the focus (``_NET_WM_PID``), if any."""
        from Xlib import Xatom, display

        try:
            d = display.Display(self.display)
        except Exception:  # noqa: BLE001 - no X server: no focus
            return None
        try:
            root = d.screen().root
            active = root.get_full_property(d.intern_atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW)
            if not active or not active.value[0]:
                return None
            win = d.create_resource_object("window", int(active.value[0]))
            pid = win.get_full_property(d.intern_atom("_NET_WM_PID"), Xatom.CARDINAL)
            return int(pid.value[0]) if pid else None
        except Exception:  # noqa: BLE001 - the window closed meanwhile
            return None
        finally:
            d.close()

    def text_roles(self) -> set[int]:
        at = self.atspi
        return {int(at.Role.TEXT), int(at.Role.ENTRY), int(at.Role.PARAGRAPH), int(at.Role.PASSWORD_TEXT)}

    def find(self, ident: str):  # noqa: ANN201
        if not isinstance(ident, str) or not re.fullmatch(r"\d+(\.\d+)*", ident):
            raise ElementError(f"element ids look like 3.0.2, got {ident!r}")
        node = self.desktop()
        try:
            for part in ident.split("."):
                node = node.get_child_at_index(int(part)) if int(part) < node.get_child_count() else None
                if node is None:
                    break
        except Exception:  # noqa: BLE001
            node = None
        if node is None:
            raise ElementError(f"no element {ident} (the window may have changed: read the tree again)")
        return node

    def element_action(self, req: dict) -> dict:
        node = self.find(req.get("id"))
        at = self.atspi
        action = req.get("action", "click")
        center = None
        comp = node.get_component_iface()
        if comp is not None:
            ext = comp.get_extents(at.CoordType.SCREEN)
            if ext.width > 0 and ext.height > 0:
                center = [ext.x + ext.width // 2, ext.y + ext.height // 2]
        if action == "focus":
            if comp is not None and comp.grab_focus():
                return {"done": True}
            return {"done": False, "center": center}
        if action == "set_text":
            text = req.get("text")
            if not isinstance(text, str) or len(text) > self.max_type:
                raise ElementError(f"set_text needs a text of at most {self.max_type} characters")
            editable = node.get_editable_text_iface()
            if editable is not None and editable.set_text_contents(text):
                return {"done": True}
            raise ElementError(f"element {req.get('id')} ({node.get_role_name()}) does not take text")
        if action == "click":
            acts = node.get_action_iface()
            if acts is not None:
                names = [acts.get_action_name(i) for i in range(acts.get_n_actions())]
                for wanted in ("click", "press", "activate", "jump", "toggle", "open"):
                    if wanted in names:
                        acts.do_action(names.index(wanted))
                        return {"done": True}
            return {"done": False, "center": center}
        raise ElementError(f"action must be click, focus or set_text, got {action!r}")
