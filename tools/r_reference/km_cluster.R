# R's survfit(..., id = id) Kaplan-Meier curves with the robust (infinitesimal jackknife) standard error for several
# rows per subject: the reference values of tests/curves/r_reference/km_cluster.json (read by
# tests/curves/test_km_cluster.py; R is not needed to test).
#
# Regenerate (R >= 4.2 with survival >= 3.5; apt-get install r-base-core r-cran-survival), from the repository root:
#     Rscript tools/r_reference/km_cluster.R
#
# With an id and repeated rows survfit's std.err is the standard error of S itself, sqrt(sum_k U_k(t)^2) with U_k the
# influence of subject k on S (Therneau & Grambsch 2000, section 7.2); its limits are survfit_confint's with
# se(log S) = std.err / S. Every time of the curve (events and censorings) is stored, with the limits of each conf.type.
suppressPackageStartupMessages({library(survival); library(jsonlite)})

curve <- function(frame, name) {
  out <- list(name = name, data = frame, curves = list())
  groups <- if ("group" %in% names(frame)) sort(unique(frame$group)) else NA
  for (g in groups) {
    sub <- if (is.na(g)) frame else frame[frame$group == g, ]
    fits <- lapply(c("log", "plain", "log-log", "logit", "arcsin"), function(ct)
      survfit(Surv(time, event) ~ 1, data = sub, id = id, conf.type = ct))
    names(fits) <- c("log", "plain", "log-log", "logit", "arcsin")
    f <- fits$log
    out$curves[[length(out$curves) + 1]] <- list(
      group = if (is.na(g)) "all" else as.character(g), time = f$time, survival = f$surv, std_err = f$std.err,
      lower = lapply(fits, function(x) x$lower), upper = lapply(fits, function(x) x$upper))
  }
  out
}

d <- read.csv("dpsurv_core/data/bundled/kidney.csv")
kidney <- data.frame(id = d$id, time = d$time, event = d$status, group = d$sex)
set.seed(20261129)
subjects <- 40
k <- sample(2:4, subjects, replace = TRUE)
synthetic <- data.frame(id = rep(seq_len(subjects), k), time = sample(1:15, sum(k), replace = TRUE),
                        event = rbinom(sum(k), 1, 0.6))
cases <- list(curve(kidney[, c("id", "time", "event")], "kidney"), curve(kidney, "kidney_by_sex"),
              curve(synthetic, "repeated_heavy_ties"))
out <- list(generated_by = "tools/r_reference/km_cluster.R", r_version = R.version.string,
            survival_version = as.character(packageVersion("survival")), cases = cases)

# jsonlite writes at most 15 significant digits: every double is written here with 17 ("%.17g"), NA as null
g17 <- function(x) ifelse(is.na(x), "null", sprintf("%.17g", as.double(x)))
verbatim <- function(x) {
  if (is.data.frame(x)) return(lapply(as.list(x), verbatim))
  if (is.list(x)) return(lapply(x, verbatim))
  if (!is.numeric(x)) return(x)
  structure(paste0("[", paste(g17(x), collapse = ","), "]"), class = "json")
}
dir.create("tests/curves/r_reference", showWarnings = FALSE, recursive = TRUE)
writeLines(toJSON(verbatim(out), json_verbatim = TRUE, auto_unbox = TRUE, pretty = FALSE),
           "tests/curves/r_reference/km_cluster.json")
