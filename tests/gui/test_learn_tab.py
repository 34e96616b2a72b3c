"""The Learn tab's charts and form as a lecturer uses them (docs/DESIGN.md §3.9), read from
--dump-layout:

- a chart hovered right of the newest record names the newest record's step, not a step never
  trained ("step 801" at step 266), and a click there shows the maps of a step the run has (xdotool);
  the marker stands at the step the maps show.

Usage: test_learn_tab.py APP CLI ASSETS
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_teaching import App, Display, run_checks, write_commands  # noqa: E402

TASK = {"task": "induction"}  # 1500 steps, scores every 25
TRAINED = 266  # between two score records: the newest record is 250, the newest snapshot 266


def checks(app, tmp):
    with Display() as display:
        def hover_and_click_past_the_newest():
            path = write_commands(tmp, "past", [{"do": "learn", "task": TASK}, {"do": "learn_to", "step": TRAINED},
                                               {"do": "view", "field": "tab", "value": "learn"}])
            with App(app, display.name, ["--commands", path, "--size", "1280x800"]) as gui:
                d = gui.settled("the run at step 266", lambda d: d["state"].get("learn", {}).get("steps_done") == TRAINED
                                and "learn_induction" in d["widgets"])
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
                d = gui.wait_for("the click's maps", lambda d: not d["state"]["learn"]["following"])
                s = d["state"]
                assert s["learn"]["step_shown"] == 250 and s["learn_marked"] == 250, (s["learn"], s["learn_marked"])
                assert s["model"]["name"].endswith("step 250"), s["model"]["name"]
                print(f"  at step {TRAINED}, 80 % along: the loss's tooltip says step {TRAINED}, the induction "
                      f"score's step 250; a click shows step 250's maps, the marker there")

        return run_checks([("hover and click past the newest step", hover_and_click_past_the_newest)])


def main():
    app = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="attnscope-learn-tab-")
    try:
        return checks(app, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
