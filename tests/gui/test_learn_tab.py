"""The Learn tab's charts and form as a lecturer uses them (docs/DESIGN.md §3.9), read from
--dump-layout:

- a chart hovered right of the newest record names the newest record's step, not a step never
  trained ("step 801" at step 266), and a click there shows the maps of a step the run has (xdotool);
  the marker stands at the step the maps show;
- the New run form beside a run, at 1280 × 720 and 200 %, scrolls to its Start and Cancel (they
  were below the window's edge, and the wheel did nothing);
- at 1280 × 720 and 1280 × 800 and 200 % each chart has room for its title, three value ticks and
  its steps (the loss was a 30-40 px strip whose one tick was "0"), two ticks labelled at least, the
  slider's label whole ("maps at step 6" for 650), and the tab scrolls to the whole legend (it was
  cut by the status bar); in presentation at 1280 × 720 and 200 % the loss, the three scores and the
  legend are all in view;
- while the run trains to a step (learn_to, a lesson's step) the status says so, not "paused".

Usage: test_learn_tab.py APP CLI ASSETS
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_teaching import App, Display, run_checks, write_commands  # noqa: E402

# 1500 steps, scores every 25; a batch of 8 and a width of 32, so that the sanitizer builds train
# to step 650 within the waits below (the default task took 30 s to step 125 under ASan).
TASK = {"task": "induction", "batch": 8, "d_model": 32}
TRAINING = 180  # seconds a wait for a step may take (ASan)
TRAINED = 266  # between two score records: the newest record is 250, the newest snapshot 266


def checks(app, tmp):
    with Display() as display:
        def hover_and_click_past_the_newest():
            path = write_commands(tmp, "past", [{"do": "learn", "task": TASK}, {"do": "learn_to", "step": TRAINED},
                                               {"do": "view", "field": "tab", "value": "learn"}])
            with App(app, display.name, ["--commands", path, "--size", "1280x800"]) as gui:
                d = gui.settled("the run at step 266", lambda d: d["state"].get("learn", {}).get("steps_done") == TRAINED
                                and "learn_induction" in d["widgets"], timeout=TRAINING)
                gui.find_window()

                def hover(widget, chart):  # at 80 % of the chart, where step 800 would be: nothing trained there
                    def act(attempt):
                        r = gui.layout()["widgets"][widget]
                        gui.move(r["x"] + r["w"] * 0.8 - attempt, r["y"] + r["h"] / 2)
                    return gui.until(act, f"{widget}'s tooltip",
                                     lambda d: d["state"].get("tooltip", {}).get("chart") == chart)

                tip = hover("learn_loss", "##loss")["state"]["tooltip"]
                assert tip["step"] == TRAINED and tip["maps_step"] == TRAINED, tip
                tip = hover("learn_induction", "induction")["state"]["tooltip"]
                assert tip["step"] == 250 and tip["maps_step"] == 250, tip
                assert tip["text"].startswith("step 250\n"), tip["text"]
                gui.xdotool("click", 1)
                # Following ends in the frame of the click; the maps of step 250 come with a later
                # frame's model (ASan: seen apart).
                d = gui.wait_for("the click's maps", lambda d: not d["state"]["learn"]["following"]
                                 and d["state"]["learn"]["step_shown"] == 250
                                 and d["state"].get("model", {}).get("name", "").endswith("step 250"))
                s = d["state"]
                assert s["learn"]["step_shown"] == 250 and s["learn_marked"] == 250, (s["learn"], s["learn_marked"])
                assert s["model"]["name"].endswith("step 250"), s["model"]["name"]
                print(f"  at step {TRAINED}, 80 % along: the loss's tooltip says step {TRAINED}, the induction "
                      f"score's step 250; a click shows step 250's maps, the marker there")

        def new_run_form_scrolls():
            path = write_commands(tmp, "form", [{"do": "learn", "task": TASK}, {"do": "learn_to", "step": 50},
                                               {"do": "view", "field": "tab", "value": "learn"}])
            with App(app, display.name, ["--commands", path, "--size", "1280x720", "--text-size", "200"]) as gui:
                gui.settled("the run at step 50", lambda d: d["state"].get("learn", {}).get("steps_done") == 50
                            and "learn_new_run_button" in d["widgets"], timeout=TRAINING)
                gui.find_window()
                d = gui.until(lambda attempt: gui.click("learn_new_run_button"), "the New run form",
                              lambda d: "learn_new_run" in d["panels"] and "learn_cancel" in d["widgets"])
                form, height = d["panels"]["learn_new_run"], d["state"]["window"][1]
                assert form["y"] + form["h"] <= height, f"the form {form} ends below the window ({height} px)"

                def reachable(d):
                    form, cancel = d["panels"]["learn_new_run"], d["widgets"]["learn_cancel"]
                    return cancel["y"] >= form["y"] and cancel["y"] + cancel["h"] <= form["y"] + form["h"] + 1

                below = not reachable(d)
                if below:  # at 200 % it is taller than the room: the wheel scrolls it
                    def wheel(attempt):
                        form = gui.layout()["panels"]["learn_new_run"]
                        gui.move(form["x"] + form["w"] / 2, form["y"] + form["h"] / 2)
                        for _ in range(10):
                            gui.xdotool("click", 5)
                    d = gui.until(wheel, "Cancel scrolled into the form", reachable)
                d = gui.until(lambda attempt: gui.click("learn_cancel"), "the form closed by Cancel",
                              lambda d: "learn_new_run" not in d["panels"])
                print(f"  1280 × 720 at 200 %: the New run form {form['h']:.0f} px tall in a {height} px window"
                      f"{', scrolled by the wheel to Start and Cancel' if below else ''}; Cancel closes it")

        def charts_on_a_projector():
            path = write_commands(tmp, "charts", [{"do": "learn", "task": TASK}, {"do": "learn_to", "step": 650},
                                                 {"do": "view", "field": "tab", "value": "learn"}])
            for size in ("1280x720", "1280x800"):
                with App(app, display.name, ["--commands", path, "--size", size, "--text-size", "200"]) as gui:
                    d = gui.settled(f"{size}: the run at step 650",
                                    lambda d: d["state"].get("learn", {}).get("steps_done") == 650
                                    and "learn_legend" in d["widgets"] and "learn_ticks" in d["state"],
                                    timeout=TRAINING)
                    s, w = d["state"], d["widgets"]
                    font = s["font_px"]["cells"]
                    # Each chart as tall as a title, three ticks' room and the steps: the loss was a
                    # 30-40 px strip whose one tick was "0".
                    for chart, ticks in s["learn_ticks"].items():
                        assert len(ticks) >= 2, f"{size}: {chart}'s value ticks {ticks}"
                    for widget in ("learn_loss", "learn_induction"):
                        assert w[widget]["h"] >= 6 * font, f"{size}: {widget} {w[widget]['h']} px, the font {font}"
                    label = s["learn_timeline_label"]
                    assert label["text"] == "maps at step 650" and w["learn_timeline"]["w"] >= label["w"] + 2 * font, \
                        f"{size}: the slider {w['learn_timeline']} for its label {label}"
                    # The legend whole: the tab scrolls to it, above the status bar.
                    gui.find_window()

                    def wheel(attempt):
                        tab = gui.layout()["panels"]["learn_run"]
                        gui.move(tab["x"] + 8, tab["y"] + tab["h"] / 2)
                        for _ in range(15):
                            gui.xdotool("click", 5)

                    def whole(d):
                        tab, legend = d["panels"]["learn_run"], d["widgets"]["learn_legend"]
                        return (legend["y"] >= tab["y"] and legend["y"] + legend["h"] <= tab["y"] + tab["h"] + 1
                                and legend["x"] + legend["w"] <= tab["x"] + tab["w"] + 1)

                    if not whole(d):
                        d = gui.until(wheel, f"{size}: the legend scrolled into view", whole)
                    tab = d["panels"]["learn_run"]
                    assert tab["y"] + tab["h"] <= d["panels"]["status"]["y"] + 1, (tab, d["panels"]["status"])
                    print(f"  {size} at 200 %: loss {w['learn_loss']['h']:.0f} px, ticks {s['learn_ticks']}, "
                          f"{label['text']!r} whole; the legend whole in the tab, scrolled to")
            # In presentation (F10), the lecturer's room at 1280 × 720 and 200 %: the loss, the three
            # scores and the legend in view at once (the legend had stood 32 px below the tab).
            path = write_commands(tmp, "charts_presented", [{"do": "learn", "task": TASK}, {"do": "learn_to", "step": 650},
                                                           {"do": "view", "field": "tab", "value": "learn"},
                                                           {"do": "view", "field": "presentation", "value": True}])
            with App(app, display.name, ["--commands", path, "--size", "1280x720", "--text-size", "200"]) as gui:
                d = gui.settled("presented: the run at step 650",
                                lambda d: d["state"].get("learn", {}).get("steps_done") == 650
                                and "learn_legend" in d["widgets"], timeout=TRAINING)
                tab, w, font = d["panels"]["learn_run"], d["widgets"], d["state"]["font_px"]["cells"]
                for widget in ("learn_loss", "learn_induction", "learn_previous", "learn_first", "learn_legend"):
                    r = w[widget]
                    assert tab["y"] <= r["y"] and r["y"] + r["h"] <= tab["y"] + tab["h"] + 1, \
                        f"presented: {widget} {r} outside the tab {tab}"
                    if widget != "learn_legend":
                        assert r["h"] >= 6 * font, f"presented: {widget} {r['h']} px, the font {font}"
                print(f"  presented at 1280 × 720, 200 %: the loss, three scores ({w['learn_first']['h']:.0f} px) and "
                      f"the legend in the tab's view")

        def training_to_a_step():
            # Steps enough to watch: the status while the run trains to a step (a lesson's learn_to).
            long = {"task": "induction", "steps": 100000, "batch": 8}
            path = write_commands(tmp, "stepping", [{"do": "learn", "task": long},
                                                   {"do": "view", "field": "tab", "value": "learn"},
                                                   {"do": "learn_to", "step": 90000}])
            with App(app, display.name, ["--commands", path, "--size", "1280x800"]) as gui:
                d = gui.wait_for("a status while it trains to 90000",
                                 lambda d: d["state"].get("learn", {}).get("steps_done", 0) > 0
                                 and "learn_status" in d["state"], timeout=TRAINING)
                s = d["state"]
                assert not s["learn"]["playing"] and s["learn"]["steps_done"] < 90000, s["learn"]
                assert "training to 90000" in s["learn_status"] and "paused" not in s["learn_status"], s["learn_status"]
                print(f"  training to 90000: {s['learn_status']!r}")

        return run_checks([("hover and click past the newest step", hover_and_click_past_the_newest),
                           ("the status while it trains to a step", training_to_a_step),
                           ("the New run form scrolls", new_run_form_scrolls),
                           ("the charts on a projector", charts_on_a_projector)])


def main():
    app = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="attnscope-learn-tab-")
    try:
        return checks(app, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
