// place.cpp: examples/place.c in C++, the same program with the same output: a model
// placed on a cluster by a baseline, and the plan's step time predicted, through the
// installed library alone. The library's objects are held by unique_ptrs that free them
// with its own calls, and its errors become exceptions.
//
//   place-cpp [MODEL.json [CLUSTER.json [ALGORITHM]]]
//
// Build: c++ -std=c++11 place.cpp $(pkg-config --cflags --libs placer)
#include <placer/autodiff.h>
#include <placer/baseline.h>
#include <placer/bound.h>
#include <placer/load.h>
#include <placer/profile.h>
#include <placer/simulate.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace
{

// A deleter calling the library's free function for T.
template <typename T, void (*Free)(T *)> struct freer {
    void operator()(T *p) const
    {
        Free(p);
    }
};
using graph_ptr = std::unique_ptr<pl_graph, freer<pl_graph, pl_graph_free>>;
using cluster_ptr = std::unique_ptr<pl_cluster, freer<pl_cluster, pl_cluster_free>>;
using plan_ptr = std::unique_ptr<pl_plan, freer<pl_plan, pl_plan_free>>;
using program_ptr = std::unique_ptr<pl_program, freer<pl_program, pl_program_free>>;

// A cost model owns its measurements: cleared, then deleted.
struct cost_free {
    void operator()(pl_cost_model *model) const
    {
        pl_cost_model_clear(model);
        delete model;
    }
};
using cost_ptr = std::unique_ptr<pl_cost_model, cost_free>;

// A placer error as an exception: the formatted line and the exit status it maps to.
struct failure : std::runtime_error {
    int status;
    explicit failure(const pl_error &err)
        : std::runtime_error(format(err)), status(err.status == PL_EINPUT ? 2 : 1)
    {
    }
    static std::string format(const pl_error &err)
    {
        char line[PL_ERROR_SOURCE_MAX + PL_ERROR_PATH_MAX + PL_ERROR_TEXT_MAX + 16];
        pl_error_format(&err, line, sizeof line);
        return line;
    }
};

// The pointer, or the error as an exception.
template <typename P> P must(P p, const pl_error &err)
{
    if (!p)
        throw failure(err);
    return p;
}

void must(pl_status status, const pl_error &err)
{
    if (status != PL_OK)
        throw failure(err);
}

void progress(void *, const char *what)
{
    std::fprintf(stderr, "place: calibrating: %s\n", what);
}

// A bundled file: the directory calibration measures holds the models and clusters.
std::string bundled(const char *name)
{
    const char *graphs = pl_profile_graphs_dir();
    return graphs ? std::string(graphs) + "/" + name : std::string();
}

int place(const std::string &model_path, const std::string &cluster_path, pl_baseline algorithm)
{
    pl_error err;
    graph_ptr graph(must(pl_graph_load_file(model_path.c_str(), &err), err));
    must(pl_autodiff_build(graph.get(), &err), err);
    cluster_ptr cluster(must(pl_cluster_load_file(cluster_path.c_str(), &err), err));
    cost_ptr cost(new pl_cost_model());
    bool calibrated = false;
    must(pl_profile_load(cost.get(), cluster.get(), false, progress, nullptr, nullptr, &calibrated, &err),
         err);
    std::printf("cost model: %s\n", calibrated ? "just calibrated" : "the cached profile");

    pl_error_init(&err, model_path.c_str());
    plan_ptr plan(
        must(pl_baseline_place(algorithm, graph.get(), cluster.get(), cost.get(), 1, &err), err));
    program_ptr program(must(pl_program_new(graph.get(), cluster.get(), plan.get(), &err), err));
    pl_simulation sim;
    double bound;
    must(pl_simulate(program.get(), cluster.get(), cost.get(), &sim, nullptr, nullptr, &err), err);
    must(pl_step_lower_bound(graph.get(), cluster.get(), cost.get(), &bound, &err), err);

    std::printf("%s on %s (%d devices), placed by %s: %d stage%s, %d micro-batch%s, %s\n",
                graph->name, cluster->name, cluster->n_devices, pl_baseline_name(algorithm),
                plan->n_stages, plan->n_stages == 1 ? "" : "s", plan->micro_batches,
                plan->micro_batches == 1 ? "" : "es", pl_plan_schedule_text(plan.get()));
    if (sim.oom_device >= 0)
        std::printf("the plan does not fit device %s's memory\n",
                    cluster->devices[sim.oom_device].name);
    std::printf("predicted step: %.3f ms\n", 1e3 * sim.step_seconds);
    std::printf("lower bound:    %.3f ms (the plan takes %.2fx the bound)\n", 1e3 * bound,
                sim.step_seconds / bound);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::string model_path = argc > 1 ? argv[1] : bundled("small/mlp-small.json");
    std::string cluster_path = argc > 2 ? argv[2] : bundled("clusters/paced-4.json");
    pl_baseline algorithm = pl_baseline_from_name(argc > 3 ? argv[3] : "pipeline-dp");
    if (argc > 4 || algorithm == PL_BASELINE_COUNT || model_path.empty() || cluster_path.empty()) {
        std::fprintf(stderr, "usage: place [MODEL.json [CLUSTER.json [ALGORITHM]]]%s\n",
                     model_path.empty() || cluster_path.empty()
                         ? " (no bundled models found: name them)"
                         : "");
        return 2;
    }
    try {
        return place(model_path, cluster_path, algorithm);
    } catch (const failure &e) {
        std::fprintf(stderr, "place: %s\n", e.what());
        return e.status;
    }
}
