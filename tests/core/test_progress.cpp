// Progress lines: on a terminal redrawn in place with done/total, elapsed and ETA; elsewhere a line
// every few seconds; nothing for a run that ends within its first interval. A fake clock drives it.
#include <doctest/doctest.h>

#include <sstream>

#include "core/progress.hpp"

using namespace monokda;

TEST_CASE("not on a terminal: a line every few seconds, with done/total, elapsed and ETA, and a last one") {
    std::ostringstream os;
    double now = 100;
    {
        Progress p("sweep: schedules", 10, 0, &os, [&] { return now; });
        for (int i = 0; i < 10; ++i) {
            now += 2;  // two seconds a schedule
            p.add();
        }
    }
    // lines at 6 s (3 done) and 12 s (6 done), then the last at 20 s; none in between
    CHECK(os.str() == "sweep: schedules: 3/10, 6.0 s, ETA 14.0 s\n"
                      "sweep: schedules: 6/10, 12.0 s, ETA 8.0 s\n"
                      "sweep: schedules: 9/10, 18.0 s, ETA 2.0 s\n"
                      "sweep: schedules: 10/10, 20.0 s, done\n");
}

TEST_CASE("on a terminal: one line redrawn in place, ended by a newline") {
    std::ostringstream os;
    double now = 0;
    Progress p("envelope", 4, 1, &os, [&] { return now; });
    now = 0.6;
    p.add();
    now = 0.7;  // within the redraw interval: nothing
    p.add();
    now = 70;
    p.add(2);
    p.finish();
    p.finish();  // once
    CHECK(os.str() == "\renvelope: 1/4, 0.6 s, ETA 1.8 s\033[K\renvelope: 4/4, 1m10s\033[K\renvelope: 4/4, 1m10s, done\033[K\n");
}

TEST_CASE("a run that ends within its first interval prints nothing; one that stops early says so") {
    std::ostringstream quiet, stopped;
    double now = 0;
    {
        Progress p("x", 3, 0, &quiet, [&] { return now; });
        now = 1;
        p.add(3);
    }
    CHECK(quiet.str().empty());
    {
        Progress p("x", 3, 0, &stopped, [&] { return now; });
        now = 7;
        p.add();
    }
    CHECK(stopped.str() == "x: 1/3, 6.0 s, ETA 12.0 s\nx: 1/3, 6.0 s, stopped\n");
}
