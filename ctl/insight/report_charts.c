/* The report's charts: the downsampled series of the run as JSON data, and
 * a small script that draws one dygraph per chart, synchronised on one time
 * axis. Each bucket is drawn as its mean with a band from its minimum to
 * its maximum (dygraphs' customBars), so peaks survive the downsampling. */
#include "insight/report.h"

#include "insight/html.h"
#include "rt/json.h"

#include <math.h>
#include <stdbool.h>

#define JOB_COLOR "#059669"
#define JOB_COLOR2 "#34d399"
#define HOST_COLOR "#2563eb"
#define HOST_COLOR2 "#60a5fa"

static const struct chart {
    const char *id, *title, *ylabel, *note;
    bool bytes, gpu;
    struct {
        int series;
        const char *label, *color;
        bool dashed;
    } s[4];
} charts[] = {
    /* The host first: the job's series are drawn over it where they meet. */
    {"cpu", "CPU", "cores", "cores busy: the job's process tree against the whole host", false, false,
     {{RT_SERIES_CORES_HOST, "host", HOST_COLOR, false}, {RT_SERIES_CORES_JOB, "job", JOB_COLOR, false}}},
    {"memory", "Memory", "bytes", "the job's memory (a process tree's PSS) and RSS against the host's used memory",
     true, false,
     {{RT_SERIES_MEM_HOST, "host used", HOST_COLOR, false},
      {RT_SERIES_RSS_JOB, "job RSS", JOB_COLOR2, true},
      {RT_SERIES_MEM_JOB, "job memory", JOB_COLOR, false}}},
    {"disk-io", "Disk I/O", "bytes/s", "read (solid) and write (dashed), the job against the host", true, false,
     {{RT_SERIES_READ_HOST, "host read", HOST_COLOR, false},
      {RT_SERIES_WRITE_HOST, "host write", HOST_COLOR2, true},
      {RT_SERIES_READ_JOB, "job read", JOB_COLOR, false},
      {RT_SERIES_WRITE_JOB, "job write", JOB_COLOR2, true}}},
    {"disk-space", "Disk space", "bytes", "used on the host's mounted file systems", true, false,
     {{RT_SERIES_SPACE_HOST, "host used", HOST_COLOR, false}}},
    {"network", "Network", "bytes/s", "the host's traffic, all interfaces but lo", true, false,
     {{RT_SERIES_NET_IN_HOST, "host in", HOST_COLOR, false}, {RT_SERIES_NET_OUT_HOST, "host out", HOST_COLOR2, true}}},
    {"gpu", "GPU use", "GPUs", "fractional GPUs busy: the job against the host", false, true,
     {{RT_SERIES_GPU_HOST, "host", HOST_COLOR, false}, {RT_SERIES_GPU_JOB, "job", JOB_COLOR, false}}},
    {"gpus", "GPUs in use", "GPUs", "GPUs with any utilisation", false, true,
     {{RT_SERIES_GPUS_HOST, "host", HOST_COLOR, false}, {RT_SERIES_GPUS_JOB, "job", JOB_COLOR, false}}},
    {"vram", "VRAM", "bytes", "GPU memory used: the job against the host", true, true,
     {{RT_SERIES_VRAM_HOST, "host", HOST_COLOR, false}, {RT_SERIES_VRAM_JOB, "job", JOB_COLOR, false}}},
};
#define NCHARTS (sizeof(charts) / sizeof(charts[0]))

static bool host_has_gpus(const struct insight_report *r)
{
    int64_t n = 0;
    rt_json_get_i64(r->host->host, "gpu_count", &n);
    return n > 0 || r->a->run.host_has_gpus;
}

static bool drawn(const struct insight_report *r, const struct chart *c)
{
    return r->a->run.charts.n && (!c->gpu || host_has_gpus(r));
}

void insight_report_charts(FILE *f, const struct insight_report *r)
{
    fputs("<section id=\"charts\"><h2>Over time</h2>\n", f);
    if (!r->a->run.charts.n) {
        fputs("<p class=\"muted\">The job has no samples yet.</p></section>\n", f);
        return;
    }
    fputs("<p class=\"muted\">Time axis: <button id=\"rt-since\" disabled>since the start</button> "
          "<button id=\"rt-clock\">clock time</button></p>\n", f);
    fprintf(f, "<p class=\"muted\">%s Drag to zoom (all charts follow), double-click to zoom out.</p>\n",
            r->a->run.charts.n < r->a->run.st.samples
                ? "Each point is the mean of consecutive samples, the band their minimum to maximum."
                : "One point per sample.");
    for (size_t i = 0; i < NCHARTS; i++) {
        if (!drawn(r, &charts[i]))
            continue;
        fprintf(f, "<div class=\"chart\"><h3>%s <span class=\"muted\">(%s)</span></h3>", charts[i].title,
                charts[i].note);
        fprintf(f, "<div class=\"legend\" id=\"legend-%s\"></div><div class=\"plot\" id=\"chart-%s\"></div></div>\n",
                charts[i].id, charts[i].id);
    }
    fputs("</section>\n", f);
}

static void number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* {"t": [seconds since the start], "series": {"K": [[lo, mean, hi] | null, …]},
 *  "charts": [{"id", "ylabel", "bytes", "labels", "colors", "dashed", "series"}]} */
static void data_json(FILE *f, const struct insight_report *r)
{
    const struct rt_buckets *b = &r->a->run.charts;
    double t0 = 0;
    rt_json_get_double(r->a->run.job, "started_at", &t0);
    fprintf(f, "{\"t0\":%.3f,\"t\":[", t0);
    bool first = true;
    for (size_t i = 0; i < b->n; i++) {
        double t;
        if (!rt_bucket_time(b, i, &t))
            continue;
        fputs(first ? "" : ",", f);
        fprintf(f, "%.3f", t - t0);
        first = false;
    }
    fputs("],\"series\":{", f);
    bool used[RT_SERIES_N] = {false};
    for (size_t c = 0; c < NCHARTS; c++)
        for (size_t k = 0; drawn(r, &charts[c]) && k < 4 && charts[c].s[k].label; k++)
            used[charts[c].s[k].series] = true;
    bool first_series = true;
    for (int k = 0; k < RT_SERIES_N; k++) {
        if (!used[k])
            continue;
        fprintf(f, "%s\"%d\":[", first_series ? "" : ",", k);
        first_series = false;
        first = true;
        for (size_t i = 0; i < b->n; i++) {
            double t, lo, mean, hi;
            if (!rt_bucket_time(b, i, &t))
                continue;
            fputs(first ? "" : ",", f);
            first = false;
            if (!rt_bucket_value(b, i, (size_t)k, &lo, &mean, &hi)) {
                fputs("null", f);
                continue;
            }
            fputc('[', f);
            number(f, lo);
            fputc(',', f);
            number(f, mean);
            fputc(',', f);
            number(f, hi);
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("},\"charts\":[", f);
    first = true;
    for (size_t c = 0; c < NCHARTS; c++) {
        const struct chart *ch = &charts[c];
        if (!drawn(r, ch))
            continue;
        fprintf(f, "%s{\"id\":\"%s\",\"ylabel\":\"%s\",\"bytes\":%s,\"labels\":[", first ? "" : ",", ch->id,
                ch->ylabel, ch->bytes ? "true" : "false");
        first = false;
        for (size_t k = 0; k < 4 && ch->s[k].label; k++)
            fprintf(f, "%s\"%s\"", k ? "," : "", ch->s[k].label);
        fputs("],\"colors\":[", f);
        for (size_t k = 0; k < 4 && ch->s[k].label; k++)
            fprintf(f, "%s\"%s\"", k ? "," : "", ch->s[k].color);
        fputs("],\"dashed\":[", f);
        for (size_t k = 0; k < 4 && ch->s[k].label; k++)
            fprintf(f, "%s%s", k ? "," : "", ch->s[k].dashed ? "true" : "false");
        fputs("],\"series\":[", f);
        for (size_t k = 0; k < 4 && ch->s[k].label; k++)
            fprintf(f, "%s\"%d\"", k ? "," : "", ch->s[k].series);
        fputs("]}", f);
    }
    fputs("]}", f);
}

/* Draws every chart from the data above; static, so it needs no escaping.
 * The time axis is the time since the job started (the clock time a button
 * away, both in the legend), with ticks at round steps that the axis's span
 * picks and one label format per axis, wide enough not to be cut. */
static const char draw_js[] =
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('rt-data').textContent);\n"
    "var graphs=[],clock=false;\n"
    /* Binary units like the tables; ticks at powers of two (labelsKMG2), and
     * at least 1 KiB of range, which a flat zero line would label in bytes' fractions. */
    "function bytes(v){var u=['B','KiB','MiB','GiB','TiB','PiB'],i=0;\n"
    "  while(Math.abs(v)>=1024&&i<5){v/=1024;i++;}\n"
    "  var a=Math.abs(v);return (i?v.toFixed(a<10?2:a<100?1:0):String(Math.round(v)))+' '+u[i];}\n"
    "function two(n){return (n<10?'0':'')+n;}\n"
    /* Seconds since the start, as a stopwatch: 4.5s, 45s, 1:30, 1:02:03, 2d 03:00. */
    "function since(s,step,span){var r=Math.round(s*10)/10,d=Math.floor(r/86400),h=Math.floor(r%86400/3600),\n"
    "  m=Math.floor(r%3600/60),x=r%60;\n"
    "  if(span<60)return (step<1?x.toFixed(1):String(Math.round(x)))+'s';\n"
    "  x=Math.round(x);if(span<3600)return m+':'+two(x);\n"
    "  if(span<86400)return h+':'+two(m)+(step<60?':'+two(x):'');\n"
    "  return d+'d '+two(h)+':'+two(m);}\n"
    /* The clock time of x: to the tenth of a second, the second, the minute, or with the date for long spans. */
    "function at(s,step,span){var t=new Date((D.t0+s)*1000),hm=two(t.getHours())+':'+two(t.getMinutes());\n"
    "  var day=two(t.getMonth()+1)+'-'+two(t.getDate());\n"
    "  var sec=hm+':'+two(t.getSeconds())+(step<1?'.'+Math.floor(t.getMilliseconds()/100):'');\n"
    "  return span>=86400?day+' '+hm:step<60?sec:hm;}\n"
    "var STEPS=[0.1,0.2,0.5,1,2,5,10,15,30,60,120,300,600,900,1800,3600,7200,10800,21600,43200,86400,172800,\n"
    "  604800];\n"
    /* Ticks a label's width apart, on round seconds of the start or of the clock. */
    "function ticker(a,b,px){var span=b-a,n=Math.max(2,Math.floor(px/110)),step=STEPS[STEPS.length-1];\n"
    "  for(var i=0;i<STEPS.length;i++)if(span/STEPS[i]<=n){step=STEPS[i];break;}\n"
    "  var off=clock?D.t0-new Date(D.t0*1000).getTimezoneOffset()*60:0,k=Math.ceil((a+off)/step-1e-9),out=[];\n"
    "  for(var v=k*step-off;v<=b+1e-9;v=(++k)*step-off)\n"
    "    out.push({v:v,label:clock?at(v,step,span):since(v,step,span)});\n"
    "  return out;}\n"
    "function xvalue(s){return '+'+since(s,1,D.t[D.t.length-1])+' ('+at(s,1,0)+')';}\n"
    "D.charts.forEach(function(c){\n"
    "  var rows=D.t.map(function(t,i){var r=[t];\n"
    "    c.series.forEach(function(k){r.push(D.series[k][i]);});return r;});\n"
    "  var top=0;rows.forEach(function(r){r.slice(1).forEach(function(v){if(v&&v[2]>top)top=v[2];});});\n"
    "  var suffix=c.ylabel==='bytes/s'?'/s':'',fmt=function(v){return bytes(v)+suffix;};\n"
    "  var series={};\n"
    "  c.labels.forEach(function(l,i){series[l]={color:c.colors[i],\n"
    "    strokePattern:c.dashed[i]?Dygraph.DASHED_LINE:null};});\n"
    "  graphs.push(new Dygraph(document.getElementById('chart-'+c.id),rows,{\n"
    "    labels:['time'].concat(c.labels),customBars:true,series:series,ylabel:c.ylabel,\n"
    "    labelsDiv:'legend-'+c.id,legend:'always',includeZero:true,\n"
    "    strokeWidth:1.5,fillAlpha:0.25,drawPoints:rows.length<3,pointSize:3,\n"
    "    labelsKMG2:c.bytes,valueRange:c.bytes&&top<1024?[0,1024]:null,\n"
    "    axes:{x:{ticker:ticker,axisLabelWidth:100,valueFormatter:xvalue},\n"
    "      y:c.bytes?{axisLabelWidth:95,axisLabelFormatter:fmt,valueFormatter:fmt}:{axisLabelWidth:80}}}));\n"
    "});\n"
    "if(graphs.length>1)Dygraph.synchronize(graphs,{zoom:true,selection:true,range:false});\n"
    /* The time axis: since the start, or the clock. */
    "[['rt-since',false],['rt-clock',true]].forEach(function(b){var e=document.getElementById(b[0]);\n"
    "  e.onclick=function(){clock=b[1];document.getElementById('rt-since').disabled=!clock;\n"
    "    document.getElementById('rt-clock').disabled=clock;\n"
    "    graphs.forEach(function(g){g.updateOptions({axes:{x:{ticker:ticker}}});});};});\n"
    "window.rtGraphs=graphs;\n"
    "})();\n";

void insight_report_chart_scripts(FILE *f, const struct insight_report *r)
{
    if (!r->a->run.charts.n)
        return;
    /* Only numbers and fixed names in here, so nothing can end the element. */
    fputs("<script type=\"application/json\" id=\"rt-data\">", f);
    data_json(f, r);
    fputs("</script>\n<script>", f);
    fputs(r->dy->js, f);
    fputs("</script>\n<script>", f);
    fputs(r->dy->sync_js, f);
    fputs("</script>\n<script>", f);
    fputs(draw_js, f);
    fputs("</script>\n", f);
}
